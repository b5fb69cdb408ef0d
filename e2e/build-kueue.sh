#!/usr/bin/env bash
# Build Kueue's released manager from the Go module proxy, for bench/vs_kueue.py only
# (`make test` and `make demo` never need it). The binary and the module's config/components
# (CRDs, RBAC, webhook manifests, read by the bench at run time) are cached in a directory named
# after the version. Nothing of Kueue's is copied into this repository.
# Prints the cache directory as its last line; `--dir` prints it without building;
# `--config` fetches only the module's config/components (seconds: no build), for unit tests
# of the bench's manifests. `kueuectl` builds Kueue's kubectl plugin (KUEUECTL_VERSION) into
# the same kind of cache directory and prints the binary's path as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
KUEUE_VERSION=${TAS_KUEUE_VERSION:-$KUEUE_VERSION}  # another release, to check a finding against it
[[ "${1:-}" == "kueuectl" ]] && KUEUE_VERSION=$KUEUECTL_VERSION

CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/tas-operator
OUT=${TAS_KUEUE_DIR:-$CACHE/kueue-v$KUEUE_VERSION}
WORK=$CACHE/build
if [[ "${1:-}" == "--dir" ]]; then echo "$OUT"; exit 0; fi
mkdir -p "$OUT" "$WORK"
# Its own lock: it never waits for a control-plane build, and two callers never build it twice.
exec 9>"$WORK/.kueue.lock"
flock 9

export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod
START=$(date +%s)
say() { echo "[kueue +$(( $(date +%s) - START ))s] $*" >&2; }

if [[ "${1:-}" == "--config" ]]; then
  if [[ ! -d "$OUT/config/components" ]]; then
    mod=$(go mod download -json "sigs.k8s.io/kueue@v$KUEUE_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    [[ -d "$mod" ]] || { echo "go mod download gave no module directory" >&2; exit 1; }
    rm -rf "$OUT/config.tmp" && mkdir -p "$OUT/config.tmp"
    cp -r "$mod/config/components" "$OUT/config.tmp/" && chmod -R u+w "$OUT/config.tmp"
    rm -rf "$OUT/config" && mv "$OUT/config.tmp" "$OUT/config"
    say "kueue config/components fetched"
  fi
  echo "$OUT"
  exit 0
fi

# Build one command of the module at its released dependency versions into $OUT/$2.
build_cmd() {
  local cmd=$1 name=$2
  say "building sigs.k8s.io/kueue/cmd/$cmd v$KUEUE_VERSION"
  mod=$(go mod download -json "sigs.k8s.io/kueue@v$KUEUE_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [[ -d "$mod" ]] || { echo "go mod download gave no module directory" >&2; exit 1; }
  # The module cache is read-only and `-mod=mod` may add go.sum lines: build from a copy.
  src=$WORK/kueue-v$KUEUE_VERSION-$cmd
  rm -rf "$src" && cp -r "$mod" "$src" && chmod -R u+w "$src"
  (cd "$src" && go build -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=v$KUEUE_VERSION" \
    -o "$OUT/$name.tmp" "./cmd/$cmd")
  mv "$OUT/$name.tmp" "$OUT/$name"
  rm -rf "$src"
  say "$cmd done"
}

if [[ "${1:-}" == "kueuectl" ]]; then
  [[ -x "$OUT/kubectl-kueue" ]] || build_cmd kueuectl kubectl-kueue
  echo "$OUT/kubectl-kueue"
  exit 0
fi

if [[ ! -x "$OUT/kueue" || ! -d "$OUT/config/components" ]]; then
  say "building sigs.k8s.io/kueue/cmd/kueue v$KUEUE_VERSION (about 6 min cold on 2 cores)"
  mod=$(go mod download -json "sigs.k8s.io/kueue@v$KUEUE_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [[ -d "$mod" ]] || { echo "go mod download gave no module directory" >&2; exit 1; }
  # The module cache is read-only and `-mod=mod` may add go.sum lines: build from a copy,
  # with the module's own go.mod, so its dependency versions are exactly the released ones.
  src=$WORK/kueue-v$KUEUE_VERSION
  rm -rf "$src" && cp -r "$mod" "$src" && chmod -R u+w "$src"
  cd "$src"
  go build -trimpath -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=v$KUEUE_VERSION" \
    -o "$OUT/kueue.tmp" ./cmd/kueue
  rm -rf "$OUT/config" && mkdir -p "$OUT/config" && cp -r config/components "$OUT/config/"
  mv "$OUT/kueue.tmp" "$OUT/kueue"
  cd / && rm -rf "$src"
  say "kueue done"
fi
echo "$OUT"
