#!/usr/bin/env bash
# `make demo`: the local cluster with a 2 blocks x 4 racks x 4 hosts topology of kwok nodes,
# shown by block and rack. Idempotent: a second run reuses the running cluster.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
py=$root/.venv/bin/python

kubeconfig=$(bash "$here/cluster.sh" up | tail -n 1 | sed 's/^KUBECONFIG=//')
bin=$(cat "$(dirname "$kubeconfig")/bin-dir")
kc() { "$bin/kubectl" --kubeconfig="$kubeconfig" "$@"; }

cd "$root"
"$py" -m e2e.topology --blocks 2 --racks 4 --hosts 4 | kc apply -f - >/dev/null
echo "waiting for 32 kwok nodes to be Ready..."
kc wait --for=condition=Ready node -l type=kwok --timeout=120s >/dev/null
"$py" -m e2e.show --kubeconfig "$kubeconfig" --kubectl "$bin/kubectl"
cat <<TXT

Explore:
  export KUBECONFIG=$kubeconfig
  $bin/kubectl get nodes -L cloud.provider.com/topology-block,cloud.provider.com/topology-rack
Stop it with: make demo-down
TXT
