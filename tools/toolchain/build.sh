#!/usr/bin/env bash
# Builds the local cluster's binaries into .tools/bin from the Go module proxy only:
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kubelet
# (k8s.io/kubernetes), etcd (go.etcd.io/etcd/server/v3), kwok (sigs.k8s.io/kwok)
# and CoreDNS (github.com/coredns/coredns), and installs the Debian packages
# real nodes run on (containerd, runc, CNI plugins, iptables; debootstrap for
# their image), pinned in versions.env.
# A binary already built at the recorded version is kept; the script says what it built.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

tools="$root/.tools"
bin="$tools/bin"
src="$tools/src"
mkdir -p "$bin" "$src"
# Built binaries are kept outside the clone too, keyed by what builds them, so a
# fresh clone (CI) links them instead of building again.
cache_key="$(cat "$here/versions.env" "$here/build.sh" | sha256sum | cut -c1-16)"
cache="${TFK8S_CACHE:-$HOME/.cache/tfk8s}/toolchain/$cache_key"
if [ -d "$cache" ]; then
  for cached in "$cache"/* "$cache"/.*.version; do
    [ -f "$cached" ] && [ ! -e "$bin/$(basename "$cached")" ] && { ln "$cached" "$bin/" 2>/dev/null || cp -p "$cached" "$bin/"; }
  done
fi
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false
export GOBIN="$bin"

built=()
kept=()

# Debian packages, at the versions recorded; installed only when one differs.
debian_packages=(
  "containerd=$CONTAINERD_DEB" "runc=$RUNC_DEB" "containernetworking-plugins=$CNI_PLUGINS_DEB"
  "iptables=$IPTABLES_DEB" "debootstrap=$DEBOOTSTRAP_DEB"
)
need_debs=()
for pinned in "${debian_packages[@]}"; do
  installed="$(dpkg-query -W -f='${Version}' "${pinned%%=*}" 2>/dev/null || true)"
  [ "$installed" = "${pinned#*=}" ] || need_debs+=("$pinned")
done
if [ "${#need_debs[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "toolchain: real nodes need these Debian packages, installed as root: ${need_debs[*]}" >&2
    exit 1
  fi
  echo "toolchain: installing ${need_debs[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_debs[@]}" >/dev/null
  built+=("${need_debs[@]}")
else
  kept+=("${debian_packages[@]}")
fi

# up_to_date NAME VERSION: the binary exists and was built at VERSION.
up_to_date() { [ -x "$bin/$1" ] && [ "$(cat "$bin/.$1.version" 2>/dev/null)" = "$2" ]; }
stamp() { echo "$2" > "$bin/.$1.version"; }

# build_wrapper NAME VERSION MODULE GO: build .tools/bin/NAME from a module of our own that
# requires MODULE at VERSION and whose main.go comes on stdin. (`go install MODULE@VERSION`
# reads the module's version list, which the proxy refuses for some modules.)
build_wrapper() {
  local name="$1" version="$2" requirement="$3" go_version="$4"
  local module="$src/$name"
  rm -rf "$module" && mkdir -p "$module"
  printf 'module tfk8s.local/%s\n\ngo %s\n\nrequire %s %s\n' "$name" "$go_version" "$requirement" "$version" > "$module/go.mod"
  cat > "$module/main.go"
  (cd "$module" && go mod tidy && go build -trimpath -o "$bin/$name" .)
  stamp "$name" "$version"; built+=("$name $version")
}

kube_binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet)
need_kube=0
for name in "${kube_binaries[@]}"; do
  up_to_date "$name" "$KUBERNETES_VERSION" || need_kube=1
done

if [ "$need_kube" = 1 ]; then
  echo "toolchain: building Kubernetes $KUBERNETES_VERSION (cold: about 10 minutes on 2 cores)"
  module="$src/kubernetes"
  rm -rf "$module" && mkdir -p "$module"
  # k8s.io/kubernetes replaces its staging modules with local paths that a
  # module download does not have; map each to its published release instead
  # (Kubernetes v1.X.Y publishes them as v0.X.Y).
  staging_version="v0.${KUBERNETES_VERSION#v1.}"
  upstream_mod="$(cd "$module" && go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" \
    | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
  {
    echo "module tfk8s.local/kubernetes-toolchain"
    echo
    grep -E '^go [0-9.]+$' "$upstream_mod"
    echo
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    echo
    echo "replace ("
    sed -n '/^replace (/,/^)/p' "$upstream_mod" \
      | sed -n "s#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 $staging_version#p"
    echo ")"
  } > "$module/go.mod"
  {
    echo "//go:build tools"
    echo
    echo "package tools"
    echo
    echo "import ("
    for name in "${kube_binaries[@]}"; do echo "	_ \"k8s.io/kubernetes/cmd/$name\""; done
    echo ")"
  } > "$module/tools.go"
  (cd "$module" && go mod tidy)
  minor="${KUBERNETES_VERSION#v1.}"; minor="${minor%%.*}"
  ldflags=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean"
  done
  packages=()
  for name in "${kube_binaries[@]}"; do packages+=("k8s.io/kubernetes/cmd/$name"); done
  (cd "$module" && go build -trimpath -ldflags "$ldflags" -o "$bin/" "${packages[@]}")
  for name in "${kube_binaries[@]}"; do stamp "$name" "$KUBERNETES_VERSION"; built+=("$name $KUBERNETES_VERSION"); done
else
  for name in "${kube_binaries[@]}"; do kept+=("$name $KUBERNETES_VERSION"); done
fi

if ! up_to_date etcd "$ETCD_VERSION"; then
  echo "toolchain: building etcd $ETCD_VERSION"
  build_wrapper etcd "$ETCD_VERSION" go.etcd.io/etcd/server/v3 1.23 <<'GO'
// etcd's own server entry point, built from its published module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
else
  kept+=("etcd $ETCD_VERSION")
fi

if ! up_to_date kwok "$KWOK_VERSION"; then
  echo "toolchain: building kwok $KWOK_VERSION"
  go install -trimpath "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  stamp kwok "$KWOK_VERSION"; built+=("kwok $KWOK_VERSION")
else
  kept+=("kwok $KWOK_VERSION")
fi

if ! up_to_date coredns "$COREDNS_VERSION"; then
  echo "toolchain: building CoreDNS $COREDNS_VERSION (only the plugins the local cluster uses)"
  # CoreDNS registers a plugin when its package is imported: importing only
  # these five builds in minutes instead of the full set's eleven.
  build_wrapper coredns "$COREDNS_VERSION" github.com/coredns/coredns 1.24 <<'GO'
// Cluster DNS for the local cluster's real nodes: CoreDNS with the plugins its Corefile uses.
package main

import (
	_ "github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
)

func main() { coremain.Run() }
GO
else
  kept+=("coredns $COREDNS_VERSION")
fi

mkdir -p "$cache"
for made in "$bin"/* "$bin"/.*.version; do
  [ -f "$made" ] && ! [ "$made" -ef "$cache/$(basename "$made")" ] && { ln -f "$made" "$cache/" 2>/dev/null || cp -p "$made" "$cache/"; }
done

for line in "${built[@]+"${built[@]}"}"; do echo "toolchain: built $line -> .tools/bin/${line%% *}"; done
if [ "${#built[@]}" = 0 ]; then
  echo "toolchain: up to date in .tools/bin (${kept[*]})"
fi
