#!/usr/bin/env bash
# The local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok,
# all on 127.0.0.1, started as host processes (no container engine needed).
#
#   e2e/cluster.sh up      start (or keep) the cluster; last line printed is KUBECONFIG=<path>
#   e2e/cluster.sh down    stop exactly the processes it started and remove their data
#   e2e/cluster.sh status  say what runs
#   e2e/cluster.sh restart-apiserver   stop the API server and start it again (an outage)
#   e2e/cluster.sh restart-etcd        stop etcd and start it again on its data (an outage)
#
# Settings (environment): TAS_CLUSTER_DIR (default .cluster in the checkout),
# TAS_KWOK_POD_COMPLETE=1 to let kwok mark Job pods Succeeded at once,
# TAS_NODE_LEASE_SECONDS (default 8) and TAS_NODE_GRACE_SECONDS (default 20): how often kwok
# renews each node's lease (a quarter of it) and when a silent node counts as dead. Benchmarks
# with thousands of nodes lengthen both, or the heartbeats alone fill the API server.
# TAS_AUDIT_POLICY=<file>: the API server writes an audit log by that policy to $D/audit.log
# (the side-by-side bench counts each controller's requests from it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
D=${TAS_CLUSTER_DIR:-$root/.cluster}
API_PORT=${TAS_API_PORT:-16443}
ETCD_PORT=${TAS_ETCD_PORT:-12379}
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

say() { echo "[cluster] $*" >&2; }
alive() { [[ -f "$D/$1.pid" ]] && kill -0 "$(cat "$D/$1.pid")" 2>/dev/null; }
kc() { "$B/kubectl" --kubeconfig="$D/kubeconfig" "$@"; }

start() {  # start NAME ARGS...: run in its own process group, log to $D/NAME.log
  local name=$1; shift
  setsid "$@" >"$D/$name.log" 2>&1 < /dev/null &
  echo $! >"$D/$name.pid"
}

wait_until() {  # wait_until SECONDS WHAT COMMAND...
  local limit=$1 what=$2; shift 2
  local deadline=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do
    if (( $(date +%s) > deadline )); then say "timed out waiting for $what; logs in $D"; return 1; fi
    sleep 0.5
  done
}

start_apiserver() {  # with the data, certificates and tokens already in $D
  start kube-apiserver "$B/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --secure-port="$API_PORT" --advertise-address=127.0.0.1 \
    --endpoint-reconciler-type=none --cert-dir="$D/serving" --token-auth-file="$D/tokens.csv" \
    --authorization-mode=RBAC --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$D/sa.key" --service-account-signing-key-file="$D/sa.key" \
    --service-cluster-ip-range=10.96.0.0/16 --allow-privileged=true \
    --disable-admission-plugins=ServiceAccount \
    --default-not-ready-toleration-seconds=20 --default-unreachable-toleration-seconds=20 \
    ${TAS_AUDIT_POLICY:+--audit-policy-file="$TAS_AUDIT_POLICY" --audit-log-path="$D/audit.log"}
  wait_until 120 kube-apiserver kc get --raw=/readyz
}

start_etcd() {  # on the data in $D/etcd
  start etcd "$B/etcd" --data-dir="$D/etcd" --listen-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" --listen-peer-urls="http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-advertise-peer-urls="http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster="default=http://127.0.0.1:$((ETCD_PORT + 1))" --unsafe-no-fsync=true
}

stop_one() {  # stop_one NAME: SIGTERM its process group, then SIGKILL; keep its log aside
  local pid; pid=$(cat "$D/$1.pid")
  kill -- "-$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -9 -- "-$pid" 2>/dev/null || true
  mv "$D/$1.log" "$D/$1.before-restart.log"
}

restart_apiserver() {  # stop the API server and start it again on the same etcd: an outage
  B=$(cat "$D/bin-dir")
  alive kube-apiserver || { say "kube-apiserver is not running"; return 1; }
  stop_one kube-apiserver
  start_apiserver
  say "kube-apiserver restarted"
}

restart_etcd() {  # stop etcd and start it again on its data: the API server loses its store
  B=$(cat "$D/bin-dir")
  alive etcd || { say "etcd is not running"; return 1; }
  stop_one etcd
  start_etcd
  wait_until 120 "kube-apiserver on the restarted etcd" kc get --raw=/readyz
  say "etcd restarted"
}

up() {
  B=$("$here/build-bins.sh" --dir)
  for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok; do
    [[ -x "$B/$b" ]] || { B=$("$here/build-bins.sh" | tail -n 1); break; }
  done
  if [[ -f "$D/kubeconfig" ]] && alive kube-apiserver && kc get --raw=/readyz >/dev/null 2>&1; then
    local all=1; for c in "${COMPONENTS[@]}"; do alive "$c" || all=0; done
    if (( all )); then say "already running"; echo "KUBECONFIG=$D/kubeconfig"; return 0; fi
    say "some components died; restarting the cluster"; down
  elif [[ -d "$D" ]]; then
    down
  fi
  local t0; t0=$(date +%s)
  mkdir -p "$D/serving" "$D/etcd"
  echo "$B" >"$D/bin-dir"
  openssl genrsa -out "$D/sa.key" 2048 2>/dev/null
  local token; token=$(openssl rand -hex 16)
  echo "$token,admin,admin,system:masters" >"$D/tokens.csv"
  cat >"$D/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:$API_PORT", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: "$token"}}]
contexts: [{name: local, context: {cluster: local, user: admin}}]
current-context: local
KC

  say "starting etcd"
  start_etcd
  say "starting kube-apiserver"
  start_apiserver

  say "starting kube-controller-manager and kube-scheduler"
  start kube-controller-manager "$B/kube-controller-manager" --kubeconfig="$D/kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false \
    --service-account-private-key-file="$D/sa.key" --root-ca-file="$D/serving/apiserver.crt" \
    --node-monitor-period=2s --node-monitor-grace-period=${TAS_NODE_GRACE_SECONDS:-20}s --concurrent-job-syncs=10 \
    --kube-api-qps=200 --kube-api-burst=400
  start kube-scheduler "$B/kube-scheduler" --kubeconfig="$D/kubeconfig" --bind-address=127.0.0.1 \
    --secure-port=0 --leader-elect=false --kube-api-qps=200 --kube-api-burst=400

  say "starting kwok"
  local stages=(node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease
    node/chaos/node-not-ready pod/fast/pod-ready pod/fast/pod-delete)
  [[ "${TAS_KWOK_POD_COMPLETE:-0}" == 1 ]] && stages+=(pod/fast/pod-complete)
  : >"$D/kwok-stages.yaml"
  for s in "${stages[@]}"; do cat "$B/kwok-stages/$s.yaml" >>"$D/kwok-stages.yaml"; echo "---" >>"$D/kwok-stages.yaml"; done
  start kwok "$B/kwok" --kubeconfig="$D/kubeconfig" --config="$D/kwok-stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-label-selector=type=kwok \
    --node-lease-duration-seconds=${TAS_NODE_LEASE_SECONDS:-8} --cidr=10.244.0.0/16 --node-ip=10.0.0.1

  wait_until 60 "default service account" kc -n default get serviceaccount default
  for c in "${COMPONENTS[@]}"; do alive "$c" || { say "$c exited; see $D/$c.log"; tail -n 20 "$D/$c.log" >&2; return 1; }; done
  say "ready in $(( $(date +%s) - t0 ))s"
  echo "KUBECONFIG=$D/kubeconfig"
}

down() {
  [[ -d "$D" ]] || { say "no cluster"; return 0; }
  local pids=()
  for c in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
    if alive "$c"; then pids+=("$(cat "$D/$c.pid")"); kill -- "-$(cat "$D/$c.pid")" 2>/dev/null || true; fi
  done
  for _ in $(seq 1 40); do
    local left=0; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && left=1; done
    (( left )) || break; sleep 0.25
  done
  for p in "${pids[@]}"; do kill -9 -- "-$p" 2>/dev/null || true; done
  rm -rf "$D"
  say "stopped"
}

status() {
  for c in "${COMPONENTS[@]}"; do
    if alive "$c"; then echo "$c: running (pid $(cat "$D/$c.pid"))"; else echo "$c: stopped"; fi
  done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  restart-apiserver) restart_apiserver ;;
  restart-etcd) restart_etcd ;;
  *) echo "usage: $0 up|down|status|restart-apiserver|restart-etcd" >&2; exit 2 ;;
esac
