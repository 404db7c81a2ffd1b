#!/usr/bin/env bash
# venv.sh PATH REQUIREMENTS: the Python environment at PATH (.venv, .venv-trainer, policy/venv) with
# REQUIREMENTS installed. It is kept outside the clone, keyed by this Python's version and the
# requirement files it reads (the -r ones too), and PATH is a link to it: a fresh clone (CI) with
# the same pins links the environment instead of installing it again (two to three minutes), and
# changing a pin makes a new one. A PATH that is a folder of its own (an environment made before
# these links, or by hand) is installed into where it is, as before, never replaced. An environment
# no pin names any more stays in the cache until removed by hand.
set -euo pipefail
target="$1"
requirements="$2"

python="${PYTHON:-python3}"
install() {
  "$python" -m venv "$1"
  "$1/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
}

if [ -d "$target" ] && [ ! -L "$target" ]; then
  install "$target"
  exit 0
fi

# The key: the interpreter, then each requirement file read, named and whole, in the order pip reads them.
read_files() {
  local file="$1"
  echo "== $file"
  cat "$file"
  sed -n 's/^[[:space:]]*-r[[:space:]]*//p' "$file" | while read -r included; do
    read_files "$(dirname "$file")/$included"
  done
}
key="$({ "$python" -c 'import sys; print(sys.version)'; read_files "$requirements"; } | sha256sum | cut -c1-16)"
cache="${TFK8S_CACHE:-$HOME/.cache/tfk8s}/venvs"
name="${target#.}"
kept="$cache/${name//\//-}-$key"
mkdir -p "$cache"
# Two clones may make the same environment at once: one makes it, the other then links it. A
# console script names its environment's path, so an environment is made where it stays, and a
# half-made one (no .complete, its maker stopped) is made again.
exec 9>"$kept.lock"
flock 9
if [ ! -f "$kept/.complete" ]; then
  rm -rf "$kept"
  echo "venv: installing $requirements into $kept"
  install "$kept"
  touch "$kept/.complete"
fi
ln -sfn "$kept" "$target"
