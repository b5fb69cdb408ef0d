#!/usr/bin/env bash
# The image's one recipe, run inside a Debian build root as root: `make image` runs it in a
# debootstrap chroot (image/build.sh), the Dockerfile in its build stage. It installs the pinned
# Debian packages, then image/rootfs.py builds the operator's wheel from /src, installs it with
# the locked dependencies into /opt/tas and assembles the image's root filesystem.
#
#   stage.sh build ROOTFS   the root filesystem, from image/*.lock
#   stage.sh lock           resolve the newest versions again and rewrite image/*.lock
#
# Environment: SOURCE_DATE_EPOCH (timestamps; default 1980-01-01), and pip's own PIP_* settings
# (an index, a CA bundle for a proxy) for the downloads from PyPI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=image.env
source "$here/image.env"
mode=${1:?usage: stage.sh build ROOTFS | stage.sh lock}
export DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-315532800}
umask 022

# The suite with its updates and security fixes, and nothing else (a Debian image's own list is
# replaced; this is a throwaway build root).
cat >/etc/apt/sources.list <<EOF
deb $DEBIAN_MIRROR $DEBIAN_SUITE main
deb $DEBIAN_MIRROR $DEBIAN_SUITE-updates main
deb $DEBIAN_SECURITY_MIRROR $DEBIAN_SUITE-security main
EOF
rm -f /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list
apt-get update -q

apt_install() { apt-get install -y -q --no-install-recommends --allow-downgrades "$@"; }
if [[ "$mode" == lock ]]; then
  apt-get dist-upgrade -y -q
  # shellcheck disable=SC2086
  apt_install $DEBIAN_ROOTS $DEBIAN_BUILD_ONLY
else
  mapfile -t pins < <(grep -v '^#' "$here/debian-packages.lock" | grep .)
  if ! apt_install "${pins[@]}"; then
    echo "stage.sh: a version pinned in image/debian-packages.lock is no longer in $DEBIAN_SUITE" \
      "(Debian replaces a package when it publishes a fix). Run \`make image-lock\`, check" \
      "the new versions, and commit the lock files." >&2
    exit 1
  fi
fi
exec "/usr/bin/$PYTHON" "$here/rootfs.py" "$@"
