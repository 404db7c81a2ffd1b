#!/usr/bin/env bash
# apt_install.sh PACKAGE=VERSION ...: installs pinned Debian packages (root). The toolchain and
# the shells' tests each install theirs, and `make -j` starts both at once on a fresh machine:
# apt allows one apt-get at a time and fails the second at once, so every install by tfk8s
# takes this lock first, and apt's own lock is waited for (an unattended upgrade may hold it).
set -euo pipefail
exec 8>/tmp/tfk8s-apt.lock
flock 8
apt-get -o DPkg::Lock::Timeout=300 update -qq
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "$@" >/dev/null
