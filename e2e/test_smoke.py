"""The harness is real: the Job controller makes pods, the scheduler binds them, kwok runs them,
node health follows kwok, and RBAC is enforced."""

from __future__ import annotations

import json
import subprocess

import pytest

from e2e import topology
from e2e.harness import Cluster, wait_for

pytestmark = pytest.mark.e2e

GATE = "example.com/smoke"


def gated_job(name: str) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "template": {
                "spec": {
                    "schedulingGates": [{"name": GATE}],
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                    ],
                }
            },
        },
    }


def job_pods(cluster: Cluster, namespace: str, job: str) -> list[dict]:
    return cluster.get_json("pods", "-n", namespace, "-l", f"job-name={job}")["items"]


def test_gated_job_pod_waits_then_lands_on_the_chosen_host(
    cluster: Cluster, namespace: str, topology_nodes
):
    cluster.apply(gated_job("smoke"), namespace)
    pod = wait_for(
        lambda: job_pods(cluster, namespace, "smoke"), what="the Job controller to create a pod"
    )[0]
    name = pod["metadata"]["name"]

    # Gated: the scheduler must leave it alone.
    def gated_pending() -> dict | None:
        p = cluster.get_json("pod", "-n", namespace, name)
        conds = {c["type"]: c for c in p["status"].get("conditions", [])}
        return p if conds.get("PodScheduled", {}).get("reason") == "SchedulingGated" else None

    p = wait_for(gated_pending, what="pod to be reported SchedulingGated")
    assert p["status"]["phase"] == "Pending"
    assert not p["spec"].get("nodeName")

    target = topology_nodes[-1]
    patch = [
        {"op": "remove", "path": "/spec/schedulingGates"},
        {"op": "add", "path": "/spec/nodeSelector", "value": {topology.HOSTNAME_LABEL: target}},
    ]
    cluster.kubectl("patch", "pod", "-n", namespace, name, "--type=json", "-p", json.dumps(patch))

    def running_on_target() -> dict | None:
        p = cluster.get_json("pod", "-n", namespace, name)
        return p if p["spec"].get("nodeName") and p["status"].get("phase") == "Running" else None

    p = wait_for(running_on_target, timeout=60, what="pod bound by the scheduler and Running")
    assert p["spec"]["nodeName"] == target


def node_ready(cluster: Cluster, name: str) -> str:
    node = cluster.get_json("node", name)
    return next(c["status"] for c in node["status"].get("conditions", []) if c["type"] == "Ready")


def test_kwok_node_goes_not_ready_and_back(cluster: Cluster):
    name = "smoke-not-ready"
    manifest = topology.node_manifest(
        name, "smoke-block", "smoke-rack", {"cpu": "1", "memory": "1Gi", "pods": "10"}
    )
    cluster.apply(manifest)
    try:
        wait_for(lambda: node_ready(cluster, name) == "True", timeout=60, what="node Ready")
        cluster.kubectl(
            "label", "node", name, "node-not-ready.stage.kwok.x-k8s.io=true", "--overwrite"
        )
        wait_for(lambda: node_ready(cluster, name) == "False", timeout=60, what="node NotReady")
        cluster.kubectl("label", "node", name, "node-not-ready.stage.kwok.x-k8s.io-")
        wait_for(lambda: node_ready(cluster, name) == "True", timeout=60, what="node Ready again")
    finally:
        cluster.kubectl("delete", "node", name, "--wait=false", check=False)


def test_rbac_refuses_a_service_account_without_roles(cluster: Cluster, namespace: str):
    cluster.kubectl("create", "serviceaccount", "nobody", "-n", namespace)
    token = cluster.kubectl("create", "token", "nobody", "-n", namespace).stdout.strip()
    server = cluster.kubectl(
        "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"
    ).stdout
    cmd = [
        cluster.tool("kubectl"),
        f"--server={server}",
        f"--token={token}",
        "--insecure-skip-tls-verify=true",
        "--kubeconfig=/dev/null",
        "get",
        "pods",
        "-n",
        namespace,
    ]
    denied = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert denied.returncode != 0
    assert "forbidden" in denied.stderr.lower()
    assert f"system:serviceaccount:{namespace}:nobody" in denied.stderr

    # The same token works once a role grants the verb: the refusal above was RBAC, not a broken token.
    cluster.kubectl(
        "create", "role", "read-pods", "--verb=list", "--resource=pods", "-n", namespace
    )
    cluster.kubectl(
        "create",
        "rolebinding",
        "read-pods",
        "--role=read-pods",
        f"--serviceaccount={namespace}:nobody",
        "-n",
        namespace,
    )
    wait_for(
        lambda: subprocess.run(cmd, capture_output=True, text=True, timeout=60).returncode == 0,
        timeout=30,
        what="the bound role to take effect",
    )
