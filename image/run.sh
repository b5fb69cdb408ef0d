#!/usr/bin/env bash
# Run a command from the image's root filesystem, as a container runtime would, without one:
#
#   image/run.sh --rootfs DIR [--user UID:GID] [--env VAR=value]... [--copy PATH]... -- COMMAND...
#
# In a private mount namespace (every mount below goes away with the process, however it ends):
# DIR bind-mounted read-only (the chart's readOnlyRootFilesystem), a fresh tmpfs on /tmp (the
# chart's emptyDir), /proc, and a /dev with only null, zero, full, random and urandom. COMMAND
# runs chrooted as UID:GID with only the --env variables (the image's environment) and the TAS_*
# variables of this process (as a pod's env). --copy puts a host file under /tmp at the same
# path, readable by the user only (a kubeconfig). The process keeps this script's PID, so a
# signal sent to it reaches the command. Needs root (unshare, mount, chroot).
set -euo pipefail
rootfs="" user=0:0
envs=() copies=()
while (($#)); do
  case "$1" in
    --rootfs) rootfs=$2; shift 2 ;;
    --user) user=$2; shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --copy) copies+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [[ -z "$rootfs" || $# -eq 0 ]]; then
  sed -n '2,12p' "$0" >&2
  exit 2
fi
rootfs=$(cd "$rootfs" && pwd)
for path in "${copies[@]}"; do
  [[ "$path" == /tmp/* && -f "$path" ]] || { echo "run.sh: --copy $path: not a file under /tmp" >&2; exit 2; }
done
while IFS='=' read -r name _; do
  [[ "$name" == TAS_* ]] && envs+=("$name=${!name}")
done < <(env)

# shellcheck disable=SC2016  # expanded by the inner shell
inner='
set -euo pipefail
root=$1 user=$2 ncopies=$3; shift 3
mount --bind "$root" "$root"
mount -o remount,bind,ro,nosuid,nodev "$root"
mount -t tmpfs -o mode=1777,nosuid,nodev,size=64m tmpfs "$root/tmp"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
mount -t tmpfs -o mode=755,nosuid,size=64k tmpfs "$root/dev"
for dev in null zero full random urandom; do
  touch "$root/dev/$dev"
  mount --bind "/dev/$dev" "$root/dev/$dev"
done
ln -s /proc/self/fd "$root/dev/fd"
for ((i = 0; i < ncopies; i++)); do
  install -D -m 0600 -o "${user%%:*}" -g "${user##*:}" "$1" "$root$1"
  shift
done
exec env -i "$@"
'
exec unshare --mount --propagation private -- bash -c "$inner" run.sh \
  "$rootfs" "$user" "${#copies[@]}" "${copies[@]}" \
  "${envs[@]}" "$(command -v chroot)" --userspec="$user" "$rootfs" "$@"
