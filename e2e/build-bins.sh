#!/usr/bin/env bash
# Build the local control plane from the Go module proxy into a cache named after the versions.
# Only missing binaries are built. Prints the cache directory as its last line.
#
#   build-bins.sh                 the control plane (etcd, kube-*, kubectl, kwok, helm)
#   build-bins.sh --dir           print the cache directory, build nothing
#   build-bins.sh manifests       also the integrations' CRDs and webhook manifests (JobSet,
#                                 LeaderWorkerSet, training-operator, MPI operator, KubeRay,
#                                 Trainer with its default runtimes, AppWrapper), copied from their
#                                 modules (a download, no build: 6 s from an empty module cache)
#   build-bins.sh integrations [NAME...]
#                                 also build those controllers (all when none is named; only
#                                 make e2e-integrations). Cold, one at a time, each with an empty
#                                 Go build cache (missing modules downloaded during it), on 2
#                                 cores shared with 2-3 unit-test runs and 2-3 local clusters (load
#                                 5-9): training-operator 177 s, mpi-operator 209 s, kuberay 220 s,
#                                 appwrapper 234 s, trainer 243 s, jobset 254 s (training-operator
#                                 v1.9.3: 250 s); LWS not measured again (about 10 min before)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

BIN_DIR=${TAS_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tas-operator/bin-k8s$KUBE_VERSION-etcd$ETCD_VERSION-kwok$KWOK_VERSION-helm$HELM_VERSION}
WORK=${XDG_CACHE_HOME:-$HOME/.cache}/tas-operator/build
if [[ "${1:-}" == "--dir" ]]; then echo "$BIN_DIR"; exit 0; fi  # where they are, building nothing
mkdir -p "$BIN_DIR" "$WORK"
# One build at a time: a second caller waits, then finds the binaries built.
exec 9>"$WORK/.lock"
flock 9

export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod
shopt -s extglob  # copy_yamls' patterns
START=$(date +%s)
say() { echo "[bins +$(( $(date +%s) - START ))s] $*" >&2; }
missing() { for b in "$@"; do [[ -x "$BIN_DIR/$b" ]] || return 0; done; return 1; }

# A fresh wrapper module per component keeps Go's version selection from mixing their dependencies.
wrapper() { rm -rf "$WORK/$1" && mkdir -p "$WORK/$1" && cd "$WORK/$1" && printf 'module local/%sbuild\n\ngo 1.26.0\n' "$1" > go.mod; }

if missing etcd; then
  say "building etcd v$ETCD_VERSION"
  wrapper etcd
  go mod edit -require=go.etcd.io/etcd/server/v3@v$ETCD_VERSION
  go build -trimpath -ldflags "-s -w" -o "$BIN_DIR/etcd" go.etcd.io/etcd/server/v3
  say "etcd done"
fi

if missing kwok; then
  say "building kwok v$KWOK_VERSION"
  wrapper kwok
  go mod edit -require=sigs.k8s.io/kwok@v$KWOK_VERSION
  go build -trimpath -ldflags "-s -w" -o "$BIN_DIR/kwok" sigs.k8s.io/kwok/cmd/kwok
  # kwok v0.8 has no built-in stages: keep the upstream stage files next to the binary.
  mkdir -p "$BIN_DIR/kwok-stages"
  cp -r "$(go env GOMODCACHE)/sigs.k8s.io/kwok@v$KWOK_VERSION/kustomize/stage/." "$BIN_DIR/kwok-stages/"
  chmod -R u+w "$BIN_DIR/kwok-stages"
  say "kwok done"
fi

if missing kube-apiserver kube-controller-manager kube-scheduler kubectl; then
  say "building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl v$KUBE_VERSION (the long one: 15-40 min cold)"
  wrapper k8s
  minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
  modfile=$(go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  go mod edit -require="k8s.io/kubernetes@v$KUBE_VERSION"
  # k8s.io/kubernetes requires its staging modules at v0.0.0; a wrapper must replace each itself.
  for m in $(sed -n 's|^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*|\1|p' "$modfile"); do
    go mod edit -replace="$m=$m@v0.$minor.${KUBE_VERSION##*.}"
  done
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=v$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  go build -trimpath -ldflags "$ld" -o "$BIN_DIR/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
  say "kubernetes done"
fi

if missing helm; then
  say "building helm v$HELM_VERSION"
  wrapper helm
  go mod edit -require="helm.sh/helm/v3@v$HELM_VERSION"
  go build -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION" \
    -o "$BIN_DIR/helm" helm.sh/helm/v3/cmd/helm
  say "helm done"
fi

# ---- the integrations' controllers, out of the control plane's way ------------------------------
# integrations/<name>-v<version>/: crds/ (and webhook/ when the controller serves webhooks) from
# the module (kustomize's inputs, applied by e2e/integrations.py), and manager, the controller's
# binary, built by a fresh wrapper module so its dependencies are the module's own.
copy_yamls() {  # copy_yamls PATH DEST: a folder's YAMLs but kustomize's own, or files by pattern
  local f matched=()
  if [[ -d "$1" ]]; then
    for f in "$1"/*.yaml; do
      case "$(basename "$f")" in kustomization.yaml|kustomizeconfig.yaml) ;; *) matched+=("$f") ;; esac
    done
  else
    shopt -s nullglob
    # shellcheck disable=SC2206  # a pattern, expanded here (extglob: !(a|b))
    matched=($1)
    shopt -u nullglob
  fi
  ((${#matched[@]})) || { echo "nothing matches $1" >&2; return 1; }
  cp "${matched[@]}" "$2/"
}
integration() {  # integration NAME MODULE VERSION MAIN_PACKAGE WEBHOOK_DIR|- CRD_PATH... [-- EXTRA_DIR]
  local name=$1 module=$2 version=$3 main=$4 webhooks=$5; shift 5
  local out="$BIN_DIR/integrations/$name-v$version" crds=() extra=""
  while (($#)); do
    if [[ "$1" == -- ]]; then extra=$2; break; fi
    crds+=("$1"); shift
  done
  if [[ ! -d "$out/crds" ]]; then
    say "copying the $name v$version CRDs and webhook manifests"
    local src p; src=$(cd "$WORK" && GOFLAGS= go mod download -json "$module@v$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    mkdir -p "$out.tmp/crds"
    for p in "${crds[@]}"; do copy_yamls "$src/$p" "$out.tmp/crds"; done
    if [[ "$webhooks" != - ]]; then
      mkdir -p "$out.tmp/webhook"
      copy_yamls "$src/$webhooks" "$out.tmp/webhook"
      [[ -d "$src/$webhooks/patches" ]] && cp "$src/$webhooks"/patches/*.yaml "$out.tmp/webhook/"
    fi
    if [[ -n "$extra" ]]; then mkdir -p "$out.tmp/extra" && copy_yamls "$src/$extra" "$out.tmp/extra"; fi
    chmod -R u+w "$out.tmp"
    rm -rf "$out" && mv "$out.tmp" "$out"
  fi
  if [[ "$MODE" == integrations && ! -x "$out/manager" ]] && wanted "$name"; then
    say "building the $name v$version controller"
    local t0; t0=$(date +%s)
    wrapper "$name"
    go mod edit -require="$module@v$version"
    go build -trimpath -ldflags "-s -w" -o "$out/manager" "$main"
    say "$name done in $(( $(date +%s) - t0 ))s"
  fi
}
MODE=${1:-}
# `build-bins.sh integrations NAME...` builds only those controllers (all when none is named).
WANTED=("${@:2}")
wanted() { ((${#WANTED[@]} == 0)) || [[ " ${WANTED[*]} " == *" $1 "* ]]; }
if [[ "$MODE" == manifests || "$MODE" == integrations ]]; then
  integration jobset sigs.k8s.io/jobset "$JOBSET_VERSION" sigs.k8s.io/jobset \
    config/components/webhook config/components/crd/bases
  integration lws sigs.k8s.io/lws "$LWS_VERSION" sigs.k8s.io/lws/cmd \
    config/webhook config/crd/bases
  # Not training-operator's MPIJob CRD (v1; mpi-operator's v2beta1 one has its name) nor MXJob's
  # (Kueue has no MXJob): PyTorchJob, TFJob, XGBoostJob, PaddleJob, and JAXJob from v1.9.
  integration training-operator github.com/kubeflow/training-operator "$TRAINING_OPERATOR_VERSION" \
    github.com/kubeflow/training-operator/cmd/training-operator.v1 manifests/base/webhook \
    'manifests/base/crds/kubeflow.org_!(mpi|mx)jobs.yaml'
  integration mpi-operator github.com/kubeflow/mpi-operator "$MPI_OPERATOR_VERSION" \
    github.com/kubeflow/mpi-operator/cmd/mpi-operator - manifests/base/kubeflow.org_mpijobs.yaml
  integration kuberay github.com/ray-project/kuberay/ray-operator "$KUBERAY_VERSION" \
    github.com/ray-project/kuberay/ray-operator - config/crd/bases
  # extra/: the default ClusterTrainingRuntimes (torch-distributed, ...); TrainJobs run as JobSets.
  integration trainer github.com/kubeflow/trainer/v2 "$TRAINER_VERSION" \
    github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager manifests/base/webhook \
    manifests/base/crds -- manifests/base/runtimes
  integration appwrapper github.com/project-codeflare/appwrapper "$APPWRAPPER_VERSION" \
    github.com/project-codeflare/appwrapper/cmd config/webhook config/crd/bases
fi

say "all binaries present"
echo "$BIN_DIR"
