"""The Helm chart installed for real. No container runs here, so the operator runs on the host
with a kubeconfig made from the chart ServiceAccount's token: every permission it uses must come
from the chart's RBAC. Its feature gates are read from the installed Deployment's arguments, so
`helm upgrade` of `featureGates` takes effect exactly as a restarted pod would see it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from e2e import jobs
from e2e.harness import ROOT, Cluster, wait_for
from e2e.operator_process import WEBHOOK_CONFIG, OperatorProcess
from e2e.topology import RACK_LABEL

pytestmark = pytest.mark.e2e

RELEASE = "tas-operator"
NAMESPACE = "tas-system"
CONSTRAINTS = jobs.PREFIX + "podset-slice-required-topology-constraints"


def helm(cluster: Cluster, *args: str) -> str:
    cmd = [cluster.tool("helm"), f"--kubeconfig={cluster.kubeconfig}", *args]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def install(cluster: Cluster, verb: str, *values: str) -> None:
    helm(
        cluster,
        verb,
        RELEASE,
        str(ROOT / "helm" / "tas-operator"),
        "-n",
        NAMESPACE,
        "--create-namespace",
        "--wait=false",
        *(["--take-ownership"] if verb == "install" else []),
        *values,
    )


def service_account_kubeconfig(cluster: Cluster, directory: Path) -> str:
    token = cluster.kubectl(
        "create", "token", RELEASE, "-n", NAMESPACE, "--duration=2h"
    ).stdout.strip()
    server = cluster.kubectl(
        "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"
    ).stdout
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "sa",
        "clusters": [
            {"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "sa"}}],
    }
    path = directory / "sa-kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def deployment_gates(cluster: Cluster) -> str:
    deployment = cluster.get_json("deployment", "-n", NAMESPACE, RELEASE)
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return next((a.split("=", 1)[1] for a in args if a.startswith("--feature-gates=")), "")


def constrained_job(name: str, queue: str) -> dict:
    layers = json.dumps([{"topology": RACK_LABEL, "size": 2}])
    return jobs.job(name, queue, pods=2, annotations={CONSTRAINTS: layers})


@pytest.fixture(scope="module")
def chart_operator(cluster: Cluster, operator: OperatorProcess, tmp_path_factory):
    """The chart installed, the session's operator replaced by one under the chart's RBAC."""
    install(cluster, "install")
    operator.stop()
    kubeconfig = service_account_kubeconfig(cluster, tmp_path_factory.mktemp("chart"))
    proc = OperatorProcess(cluster, kubeconfig=kubeconfig, gates=deployment_gates(cluster))
    proc.start()
    yield proc
    proc.stop()
    operator.start()


def test_operator_under_the_chart_rbac_admits_and_places(
    cluster: Cluster, namespace: str, chart_operator
):
    cluster.apply(
        jobs.local_queue("q", "tas-cluster-queue"),
        namespace,
    )
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
    bad = jobs.job("bad", "q", pods=2, annotations={jobs.PREFIX + "podset-slice-size": "2"})
    refused = cluster.kubectl(
        "apply", "-n", namespace, "-f", "-", input=json.dumps(bad), check=False
    )
    assert refused.returncode != 0 and "podset-slice-size" in refused.stderr
    assert "forbidden" not in chart_operator.log().lower()


def test_helm_upgrade_of_feature_gates_takes_effect(
    cluster: Cluster, namespace: str, chart_operator
):
    cluster.apply(
        jobs.local_queue("q", "tas-cluster-queue"),
        namespace,
    )
    cluster.apply(constrained_job("layered", "q"), namespace)  # multi-layer slices: on by default
    jobs.wait_admitted(cluster, namespace, "layered")

    install(
        cluster,
        "upgrade",
        "--reuse-values",
        "--set-json",
        'featureGates=[{"name":"TASMultiLayerTopology","enabled":false}]',
    )
    assert deployment_gates(cluster) == "TASMultiLayerTopology=false"
    chart_operator.stop(remove_webhooks=False)  # they belong to the release
    chart_operator.gates = deployment_gates(cluster)  # the restarted pod's arguments
    chart_operator.start()
    refused = cluster.kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        input=json.dumps(constrained_job("again", "q")),
        check=False,
    )
    assert refused.returncode != 0 and "TASMultiLayerTopology" in refused.stderr


def test_helm_uninstall_leaves_only_the_crds(cluster: Cluster, chart_operator):
    chart_operator.stop(remove_webhooks=False)
    helm(cluster, "uninstall", RELEASE, "-n", NAMESPACE, "--wait")
    selector = f"app.kubernetes.io/instance={RELEASE}"
    for kind in ("clusterroles", "clusterrolebindings"):
        assert not cluster.get_json(kind, "-l", selector)["items"], kind
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        names = [i["metadata"]["name"] for i in cluster.get_json(kind)["items"]]
        assert WEBHOOK_CONFIG not in names, kind
    crds = [c["metadata"]["name"] for c in cluster.get_json("crd")["items"]]
    assert "workloads.kueue.x-k8s.io" in crds and "topologies.kueue.x-k8s.io" in crds
    wait_for(lambda: cluster.get_json("topology", "default"), what="the Topology kept with its CRD")
