"""The Helm chart installed for real. The session's operator already runs on the host under the
chart ServiceAccount's token (see conftest.py), so every e2e test exercises the chart's RBAC;
these tests add what is the chart's own: no permission refused, `helm upgrade` of
`featureGates`, and `helm uninstall`."""

from __future__ import annotations

import json

import pytest

from e2e import chart, jobs
from e2e.harness import Cluster, wait_for
from e2e.operator_process import WEBHOOK_CONFIG, OperatorProcess
from e2e.topology import RACK_LABEL

pytestmark = pytest.mark.e2e

CONSTRAINTS = jobs.PREFIX + "podset-slice-required-topology-constraints"


def constrained_job(name: str, queue: str) -> dict:
    layers = json.dumps([{"topology": RACK_LABEL, "size": 2}])
    return jobs.job(name, queue, pods=2, annotations={CONSTRAINTS: layers})


def restart_with_deployment_gates(cluster: Cluster, operator: OperatorProcess) -> None:
    """What a new pod of the upgraded Deployment would do: start with its arguments."""
    operator.stop()  # they belong to the release
    operator.gates = chart.deployment_gates(cluster)
    operator.start()


def test_the_operator_runs_under_the_chart_service_account(
    cluster: Cluster, namespace: str, operator
):
    assert "system:serviceaccount" not in operator.kubeconfig  # a token, not a user name
    whoami = cluster.kubectl(
        "auth", "whoami", f"--kubeconfig={operator.kubeconfig}", "-o", "json", check=False
    )
    if whoami.returncode == 0:  # `auth whoami` needs SelfSubjectReview, on by default since 1.28
        username = json.loads(whoami.stdout)["status"]["userInfo"]["username"]
        assert username == f"system:serviceaccount:{chart.NAMESPACE}:{chart.RELEASE}"
    cluster.apply(jobs.local_queue("q", "tas-cluster-queue"), namespace)
    cluster.apply(
        jobs.job(
            "rack", "q", pods=4, annotations={jobs.PREFIX + "podset-required-topology": RACK_LABEL}
        ),
        namespace,
    )
    workload = jobs.wait_admitted(cluster, namespace, "rack")
    pods = jobs.wait_running(cluster, namespace, "rack", 4)
    assert jobs.placement(pods) == jobs.assignment_counts(workload)
    events = cluster.get_json("events", "-n", namespace)["items"]
    assert any(
        e["reason"] == "Admitted" and e["involvedObject"]["kind"] == "Workload" for e in events
    )
    # RBAC refusals only: a write into a namespace another test is deleting is refused as
    # "forbidden ... because it is being terminated", which says nothing of our permissions.
    refusals = [
        line
        for line in operator.log().lower().splitlines()
        if "forbidden" in line and "being terminated" not in line
    ]
    assert not refusals, refusals


def test_helm_upgrade_of_feature_gates_takes_effect(cluster: Cluster, namespace: str, operator):
    cluster.apply(jobs.local_queue("q", "tas-cluster-queue"), namespace)
    # Multi-layer slices are off by default, as in Kueue v0.17.0.
    first = json.dumps(constrained_job("refused", "q"))
    refused = cluster.kubectl("apply", "-n", namespace, "-f", "-", input=first, check=False)
    assert refused.returncode != 0 and "TASMultiLayerTopology" in refused.stderr
    try:
        chart.upgrade(
            cluster,
            "--reuse-values",
            "--set-json",
            'featureGates=[{"name":"TASMultiLayerTopology","enabled":true}]',
        )
        assert chart.deployment_gates(cluster) == "TASMultiLayerTopology=true"
        restart_with_deployment_gates(cluster, operator)
        cluster.apply(constrained_job("layered", "q"), namespace)
        jobs.wait_admitted(cluster, namespace, "layered")
    finally:
        chart.upgrade(cluster, "--reuse-values", "--set-json", "featureGates=[]")
        restart_with_deployment_gates(cluster, operator)


def test_helm_uninstall_leaves_only_the_crds(cluster: Cluster, operator):
    operator.stop()
    try:
        chart.helm(cluster, "uninstall", chart.RELEASE, "-n", chart.NAMESPACE, "--wait")
        selector = f"app.kubernetes.io/instance={chart.RELEASE}"
        for kind in ("clusterroles", "clusterrolebindings"):
            assert not cluster.get_json(kind, "-l", selector)["items"], kind
        for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
            names = [i["metadata"]["name"] for i in cluster.get_json(kind)["items"]]
            assert WEBHOOK_CONFIG not in names, kind
        crds = [c["metadata"]["name"] for c in cluster.get_json("crd")["items"]]
        assert "workloads.kueue.x-k8s.io" in crds and "topologies.kueue.x-k8s.io" in crds
        assert cluster.get_json("topology", "default")  # the users' objects stay with the CRDs
    finally:
        chart.install(cluster)  # the other tests run under the chart too
        wait_for(
            lambda: cluster.get_json("serviceaccount", "-n", chart.NAMESPACE, chart.RELEASE),
            what="the ServiceAccount back",
        )
        operator.kubeconfig = chart.service_account_kubeconfig(
            cluster
        )  # a new account, a new token
        operator.start()
