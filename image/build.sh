#!/usr/bin/env bash
# `make image`: the operator's OCI image, built with no container engine and no registry.
#
#   image/build.sh          dist/tas-operator-<version>.oci.tar, the wheel and the package list
#   image/build.sh --lock   resolve the newest versions again and rewrite image/*.lock
#
# debootstrap makes a Debian build root (cached), image/stage.sh runs in it under chroot (the
# Dockerfile's build stage runs the same script), and umoci packs the root filesystem it
# assembles as one layer with the image's user, entrypoint and labels from image/image.env.
# Needs root, and Debian's debootstrap, umoci and skopeo, which it installs when they are
# missing. Settings: TAS_IMAGE_DIST (default dist/), TAS_IMAGE_CACHE (default
# ~/.cache/tas-operator/image), SOURCE_DATE_EPOCH (default: the last commit's time).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=image.env
source "$here/image.env"
MODE=build
[[ "${1:-}" == --lock ]] && MODE=lock

NAME=$IMAGE_TITLE
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/pyproject.toml" | head -1)
DIST=${TAS_IMAGE_DIST:-$root/dist}
ARCHIVE=$DIST/$NAME-$VERSION.oci.tar
CACHE=${TAS_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tas-operator/image}
BROOT=$CACHE/buildroot-$DEBIAN_SUITE
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
START=$(date +%s)
say() { echo "[image +$(($(date +%s) - START))s] $*" >&2; }

if ((EUID != 0)); then
  echo "image/build.sh: run it as root (debootstrap and chroot need it)" >&2
  exit 1
fi

need=()
for tool in debootstrap umoci skopeo; do command -v "$tool" >/dev/null || need+=("$tool"); done
[[ -f $KEYRING ]] || need+=(debian-archive-keyring)
if ((${#need[@]})); then
  say "installing ${need[*]} from Debian's packages"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi

mkdir -p "$CACHE/debs" "$DIST"
exec 9>"$CACHE/.lock"
flock 9 # one build at a time: they share the build root

export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 315532800)}
REVISION=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
[[ -z "$(git -C "$root" status --porcelain 2>/dev/null)" ]] || REVISION+=-dirty

if [[ ! -f "$BROOT/.bootstrapped" ]]; then
  say "debootstrap --variant=minbase $DEBIAN_SUITE into $BROOT (once; the packages are cached)"
  rm -rf "$BROOT"
  if ! debootstrap --variant=minbase --cache-dir="$CACHE/debs" --keyring="$KEYRING" \
    "$DEBIAN_SUITE" "$BROOT" "$DEBIAN_MIRROR" >"$CACHE/debootstrap.log" 2>&1; then
    tail -20 "$CACHE/debootstrap.log" >&2
    exit 1
  fi
  touch "$BROOT/.bootstrapped"
fi

# The inputs, as the Dockerfile copies them: the package's sources and this directory.
rm -rf "$BROOT/src" "$BROOT/build"
mkdir -p "$BROOT/src" "$BROOT/build"
# shellcheck disable=SC2086  # a list of paths
tar -C "$root" --exclude=__pycache__ --exclude='*.egg-info' -cf - $IMAGE_INPUTS |
  tar -C "$BROOT/src" -xf -
# PyPI through whatever this machine trusts (a proxy's CA); every download is hash-checked.
cp "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$BROOT/build/pip-ca.crt"
cat /etc/resolv.conf >"$BROOT/etc/resolv.conf"
envs=(PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 PIP_CERT=/build/pip-ca.crt
  "SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH")
for var in PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST PIP_DEFAULT_TIMEOUT \
  http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
  [[ -z "${!var:-}" ]] || envs+=("$var=${!var}")
done
args=(build /rootfs)
[[ $MODE == build ]] || args=(lock)

say "image/stage.sh ${args[*]} in the build root (log: $CACHE/stage.log)"
# A private mount namespace: /proc goes away with the chroot, whatever happens to this script.
# shellcheck disable=SC2016  # expanded by the inner shell
if ! unshare --mount --propagation private -- bash -c \
  'mount -t proc proc "$1/proc" && exec chroot "$1" env -i "${@:2}"' _ "$BROOT" \
  "${envs[@]}" bash /src/image/stage.sh "${args[@]}" >"$CACHE/stage.log" 2>&1; then
  tail -30 "$CACHE/stage.log" >&2
  exit 1
fi

if [[ $MODE == lock ]]; then
  cp "$BROOT"/src/image/*.lock "$here/"
  # The Dockerfile's build stage: the digest of the tag's manifest list (its raw bytes') now.
  tag="debian:$DEBIAN_SUITE-slim"
  digest=$(skopeo inspect --raw "docker://docker.io/library/$tag" | sha256sum | cut -d' ' -f1)
  sed -i "s|^DEBIAN_BUILD_IMAGE=.*|DEBIAN_BUILD_IMAGE=$tag@sha256:$digest|" "$here/image.env"
  sed -i "s|^FROM debian:[^ ]* AS build\$|FROM $tag@sha256:$digest AS build|" "$root/Dockerfile"
  say "rewrote image/*.lock and the build image's digest; review them with git diff and commit them"
  exit 0
fi

ROOTFS=$BROOT/rootfs
LAYOUT=$CACHE/oci
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
say "packing $ROOTFS with umoci"
rm -rf "$LAYOUT"
umoci init --layout "$LAYOUT"
umoci new --image "$LAYOUT:$VERSION"
umoci insert --image "$LAYOUT:$VERSION" --history.created="$created" \
  --history.created_by="image/build.sh: $DEBIAN_SUITE packages and the tas-operator wheel" \
  "$ROOTFS" /
config=(--no-history --created="$created" --os=linux --architecture=amd64
  --config.user="$IMAGE_USER" --config.entrypoint="$IMAGE_ENTRYPOINT" --config.cmd="$IMAGE_CMD"
  --config.workingdir=/ --clear=config.env
  --config.label="org.opencontainers.image.title=$IMAGE_TITLE"
  --config.label="org.opencontainers.image.description=$IMAGE_DESCRIPTION"
  --config.label="org.opencontainers.image.licenses=$IMAGE_LICENSES"
  --config.label="org.opencontainers.image.version=$VERSION"
  --config.label="org.opencontainers.image.revision=$REVISION"
  --config.label="org.opencontainers.image.created=$created")
for var in $IMAGE_ENV; do config+=(--config.env="$var"); done
umoci config --image "$LAYOUT:$VERSION" "${config[@]}"
umoci gc --layout "$LAYOUT"
# containerd (`ctr images import`, `kind load image-archive`) names the image after this
# annotation: the chart's default image.repository and tag.
python3 - "$LAYOUT/index.json" "docker.io/library/$NAME:$VERSION" <<'EOF'
import json, sys
path, name = sys.argv[1:]
index = json.load(open(path))
[manifest] = index["manifests"]
manifest.setdefault("annotations", {})["io.containerd.image.name"] = name
json.dump(index, open(path, "w"), separators=(",", ":"))
EOF

# An OCI archive is the layout in a tar; written in a fixed order with fixed times.
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
  -C "$LAYOUT" -cf "$ARCHIVE.tmp" oci-layout index.json blobs
mv "$ARCHIVE.tmp" "$ARCHIVE"
skopeo inspect "oci-archive:$ARCHIVE" >/dev/null
cp "$ROOTFS/usr/share/doc/tas-operator/packages.txt" "$DIST/$NAME-$VERSION.packages.txt"
cp "$BROOT"/build/dist/*.whl "$DIST/"

layer=$(skopeo inspect --raw "oci-archive:$ARCHIVE" | python3 -c \
  'import json,sys; print(sum(l["size"] for l in json.load(sys.stdin)["layers"]))')
files=$(du -s --apparent-size -B1 "$ROOTFS" | cut -f1)
digest=$(skopeo inspect "oci-archive:$ARCHIVE" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Digest"])')
mb() { echo "$(($1 / 1000000)) MB"; }
say "done: $ARCHIVE"
echo "image  $NAME:$VERSION  $digest"
echo "size   $(mb "$files") unpacked, $(mb "$layer") compressed layer, archive $(mb "$(stat -c %s "$ARCHIVE")")"
echo "list   $DIST/$NAME-$VERSION.packages.txt ($(grep -c '^deb ' "$DIST/$NAME-$VERSION.packages.txt") Debian, $(grep -c '^pypi ' "$DIST/$NAME-$VERSION.packages.txt") Python packages)"
echo "push   skopeo copy oci-archive:$ARCHIVE docker://<registry>/$NAME:$VERSION"
