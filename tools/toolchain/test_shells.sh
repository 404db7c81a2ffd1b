#!/usr/bin/env bash
# The shells images have as /bin/sh, for the tests of the shell that starts every task
# (tests/objects/test_signal_forwarder.py, test_log_forwarder.py): dash (Debian, Ubuntu) and
# bash (UBI, Amazon Linux) are this machine's own; busybox (Alpine) is installed here, at the
# version versions.env records, when root can. Without it its tests are skipped, said here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

installed="$(dpkg-query -W -f='${Status} ${Version}' busybox 2>/dev/null || true)"
[ "$installed" != "install ok installed $BUSYBOX_DEB" ] || exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "test-shells: busybox $BUSYBOX_DEB is not installed (apt-get as root installs it): its shell's tests are skipped" >&2
  exit 0
fi
echo "test-shells: installing busybox=$BUSYBOX_DEB"
bash "$here/apt_install.sh" "busybox=$BUSYBOX_DEB"
