"""The generated CRDs on a real apiserver: they install, Kueue's TAS examples apply unchanged,
invalid objects are refused with our messages, nothing we write is pruned, and
`kubectl explain` works.

Uses the `cluster` and `namespace` fixtures of the repo-root conftest.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tas.api import conversion
from tas.api.constants import GROUP, HOSTNAME_LABEL
from tas.api.models import (
    RESOURCES,
    ClusterQueue,
    LocalQueue,
    ResourceFlavor,
    Topology,
    Workload,
    v1beta1,
)
from tests.integration.conversion import conversion_webhook
from tests.workloads import admitted_workload

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "crds"
EXAMPLES = ROOT / "examples" / "kueue-tas"
CRD_NAMES = [f"{r.crd.plural}.{r.crd.group}" for r in RESOURCES]
PLURAL = {r.model_fields["kind"].default: r.crd.plural for r in RESOURCES}
BLOCK, RACK = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"


def eventually(action: Callable[[], Any], timeout: float = 60, what: str = "") -> Any:
    """Retry `action` until it stops raising: discovery and OpenAPI lag behind Established."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return action()
        except (AssertionError, RuntimeError):
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def run(cluster: Any, *args: str, input: str | None = None) -> str:
    """kubectl that raises RuntimeError with stderr, so `eventually` can retry it."""
    proc = cluster.kubectl(*args, input=input, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {proc.stderr}")
    return proc.stdout


def get_json(cluster: Any, *args: str) -> dict[str, Any]:
    return json.loads(run(cluster, "get", *args, "-o", "json"))


@pytest.fixture(scope="module")
def crds(cluster: Any) -> Any:
    run(cluster, "apply", "-f", str(CRD_DIR))
    run(
        cluster,
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        *[f"crd/{name}" for name in CRD_NAMES],
    )
    # The kinds whose versions differ are converted by the operator's webhook, served here.
    with conversion_webhook(cluster):
        # Wait until discovery serves every kind, so later kubectl calls resolve them.
        for resource in RESOURCES:
            eventually(
                lambda r=resource: run(cluster, "get", f"{r.crd.plural}.{r.crd.group}", "-A")
            )
        yield cluster


@pytest.fixture
def ns(crds: Any, namespace: str) -> str:
    proc = crds.kubectl("create", "namespace", namespace, check=False)
    assert proc.returncode == 0 or "AlreadyExists" in proc.stderr, proc.stderr
    return namespace


@pytest.fixture
def cleanup(crds: Any) -> Iterator[list[tuple[str, ...]]]:
    """Objects to delete after the test, as kubectl args: (resource, name[, -n, ns])."""
    objects: list[tuple[str, ...]] = []
    yield objects
    for obj in reversed(objects):
        crds.kubectl("delete", "--ignore-not-found", "--wait=false", *obj, check=False)


# --- installation -----------------------------------------------------------------------------
def test_all_crds_established_with_names_accepted(crds: Any) -> None:
    for name in CRD_NAMES:
        crd = get_json(crds, "crd", name)
        conds = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conds.get("Established") == "True", name
        assert conds.get("NamesAccepted") == "True", name
        expected = ["tas"] if name.endswith(".tas-operator.io") else ["kueue"]
        assert crd["status"]["acceptedNames"]["categories"] == expected


def test_short_names_and_category_resolve(crds: Any) -> None:
    for short in ("topo", "rf", "cq", "lq", "kwl", "pg"):
        run(crds, "get", short, "-A")
    run(crds, "get", "kueue", "-A")
    run(crds, "get", "tas", "-A")


# --- Kueue's documented examples, unchanged ---------------------------------------------------
SEEDS = [
    ("topology.yaml", "topologies", "default", None),
    ("resource-flavor.yaml", "resourceflavors", "tas-flavor", None),
    ("cluster-queue.yaml", "clusterqueues", "tas-cluster-queue", None),
    ("local-queue.yaml", "localqueues", "tas-user-queue", "default"),
]


def test_seed_manifests_apply_unchanged(crds: Any, cleanup: list) -> None:
    for file, plural, name, namespace in SEEDS:
        where = ("-n", namespace) if namespace else ()
        cleanup.append((f"{plural}.{GROUP}", name, *where))
        eventually(lambda f=file: run(crds, "apply", "-f", str(EXAMPLES / f)), timeout=30)

    topo = Topology.model_validate(get_json(crds, f"topologies.v1beta1.{GROUP}", "default"))
    assert topo.spec.node_labels == [BLOCK, RACK, HOSTNAME_LABEL]
    # Written as v1alpha1, served as both versions.
    alpha = get_json(crds, f"topologies.v1alpha1.{GROUP}", "default")
    assert alpha["apiVersion"] == f"{GROUP}/v1alpha1"
    assert alpha["spec"] == topo.to_kube()["spec"]

    rf = ResourceFlavor.model_validate(get_json(crds, f"resourceflavors.{GROUP}", "tas-flavor"))
    assert rf.spec.node_labels == {"cloud.provider.com/node-group": "tas-group"}
    assert rf.spec.topology_name == "default"

    raw_cq = get_json(crds, f"clusterqueues.{GROUP}", "tas-cluster-queue")
    assert raw_cq["spec"]["namespaceSelector"] == {}  # {} selects all; must survive pruning
    assert raw_cq["spec"]["queueingStrategy"] == "BestEffortFIFO"  # Kueue's default
    quotas = raw_cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert [(q["name"], q["nominalQuota"]) for q in quotas] == [("cpu", 100), ("memory", "100Gi")]
    ClusterQueue.model_validate(raw_cq)

    lq = LocalQueue.model_validate(
        get_json(crds, f"localqueues.{GROUP}", "tas-user-queue", "-n", "default")
    )
    assert lq.spec.cluster_queue == "tas-cluster-queue"

    # kubectl get is useful: the printer columns show.
    topo_table = run(crds, "get", "topo", "default")
    assert BLOCK in topo_table and HOSTNAME_LABEL in topo_table
    out = run(crds, "get", "cq", "tas-cluster-queue")
    assert "COHORT" in out and "PENDING WORKLOADS" in out and "ADMITTED" not in out
    out = run(crds, "get", "cq", "tas-cluster-queue", "-o", "wide")  # as Kueue shows them
    assert "STRATEGY" in out and "ADMITTED WORKLOADS" in out
    assert "tas-cluster-queue" in run(crds, "get", "lq", "-n", "default")


# --- invalid objects are refused at once, with our message --------------------------------------
def topology(name: str, *labels: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": x} for x in labels]},
    }


def flavor(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": spec,
    }


def cluster_queue(name: str, quotas: dict[str, Any], covered: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": covered,
                    "flavors": [
                        {
                            "name": "f",
                            "resources": [
                                {"name": r, "nominalQuota": q} for r, q in quotas.items()
                            ],
                        }
                    ],
                }
            ]
        },
    }


INVALID = [
    (topology("it-hostname-first", HOSTNAME_LABEL, RACK), "can only be the lowest topology level"),
    (topology("it-duplicate", BLOCK, RACK, BLOCK), "topology levels must be unique"),
    (topology("it-17-levels", *[f"example.com/l{i}" for i in range(17)]), "at most 16 items"),
    (topology("it-no-levels"), "at least 1 item"),
    (topology("it-bad-label", "Not A Label"), "should match"),
    (
        flavor("it-no-node-labels", {"topologyName": "default"}),
        "a ResourceFlavor with topologyName needs at least one entry in nodeLabels",
    ),
    (
        flavor("it-bad-topology-name", {"nodeLabels": {"a": "b"}, "topologyName": "Bad_Name"}),
        "should match",
    ),
    (
        flavor("it-bad-toleration", {"tolerations": [{"value": "v"}]}),
        "a toleration without a key must use operator Exists",
    ),
    (cluster_queue("it-negative-quota", {"cpu": -1}, ["cpu"]), "greater than or equal to 0"),
    (cluster_queue("it-negative-quota-str", {"cpu": "-1"}, ["cpu"]), "should match"),
    (
        cluster_queue("it-missing-resource", {"cpu": 1}, ["cpu", "memory"]),
        "each flavor must list exactly as many resources as coveredResources",
    ),
]


@pytest.mark.parametrize(
    ("manifest", "message"), INVALID, ids=[m["metadata"]["name"] for m, _ in INVALID]
)
def test_invalid_object_refused(
    crds: Any, cleanup: list, manifest: dict[str, Any], message: str
) -> None:
    cleanup.append((f"{PLURAL[manifest['kind']]}.{GROUP}", manifest["metadata"]["name"]))
    proc = crds.kubectl("create", "-f", "-", input=json.dumps(manifest), check=False)
    assert proc.returncode != 0, f"accepted: {manifest}"
    assert message in proc.stderr


def workload(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"podSets": [{"name": "main", "count": 1, "template": {"spec": {}}}], **spec},
    }


@pytest.mark.parametrize(
    ("podset", "message"),
    [
        ({"count": -1}, "greater than or equal to 0"),
        ({"count": 1, "minCount": 2}, "minCount must not exceed count"),
        (
            {"topologyRequest": {"required": RACK, "preferred": BLOCK}},
            "at most one of required, preferred and unconstrained may be set",
        ),
        (
            {"topologyRequest": {"podSetSliceRequiredTopology": RACK}},
            "podSetSliceRequiredTopology and podSetSliceSize must be set together",
        ),
    ],
    ids=["negative-count", "min-count", "two-modes", "slice-without-size"],
)
def test_invalid_workload_refused(crds: Any, ns: str, podset: dict, message: str) -> None:
    doc = workload("it-bad", ns)
    doc["spec"]["podSets"][0].update(podset)
    proc = crds.kubectl("create", "-f", "-", input=json.dumps(doc), check=False)
    assert proc.returncode != 0, f"accepted: {doc}"
    assert message in proc.stderr
    crds.kubectl(
        "delete", "--ignore-not-found", "-n", ns, "workload.kueue.x-k8s.io", "it-bad", check=False
    )


UPDATES = [
    pytest.param(
        topology("it-upd-levels", BLOCK, RACK),
        topology("it-upd-levels", BLOCK),
        "topology levels are immutable",
        id="topology-level-removed",
    ),
    pytest.param(
        topology("it-upd-hostname", BLOCK, RACK, HOSTNAME_LABEL),
        topology("it-upd-hostname", RACK, HOSTNAME_LABEL),
        None,
        id="topology-change-allowed-while-hostname-lowest",
    ),
    pytest.param(
        topology("it-upd-hostname-dropped", BLOCK, HOSTNAME_LABEL),
        topology("it-upd-hostname-dropped", BLOCK, RACK),
        "topology levels are immutable",
        id="topology-hostname-dropped",
    ),
    pytest.param(
        flavor("it-upd-topology-name", {"nodeLabels": {"a": "b"}, "topologyName": "default"}),
        flavor("it-upd-topology-name", {"nodeLabels": {"a": "b"}, "topologyName": "other"}),
        "topologyName cannot be changed or removed once set",
        id="flavor-topology-renamed",
    ),
    pytest.param(
        flavor("it-upd-topology-removed", {"nodeLabels": {"a": "b"}, "topologyName": "default"}),
        flavor("it-upd-topology-removed", {"nodeLabels": {"a": "b"}}),
        "topologyName cannot be changed or removed once set",
        id="flavor-topology-removed",
    ),
    pytest.param(
        flavor("it-upd-topology-added", {"nodeLabels": {"a": "b"}}),
        flavor("it-upd-topology-added", {"nodeLabels": {"a": "b"}, "topologyName": "default"}),
        None,
        id="flavor-topology-added",
    ),
]


@pytest.mark.parametrize(("before", "after", "message"), UPDATES)
def test_updates(
    crds: Any, cleanup: list, before: dict[str, Any], after: dict[str, Any], message: str | None
) -> None:
    plural = PLURAL[before["kind"]]
    cleanup.append((f"{plural}.{GROUP}", before["metadata"]["name"]))
    run(crds, "apply", "-f", "-", input=json.dumps(before))
    proc = crds.kubectl("apply", "-f", "-", input=json.dumps(after), check=False)
    if message is None:
        assert proc.returncode == 0, proc.stderr
        stored = get_json(crds, f"{plural}.{GROUP}", after["metadata"]["name"])
        assert stored["spec"] == after["spec"]
    else:
        assert proc.returncode != 0, f"accepted: {after}"
        assert message in proc.stderr


def test_local_queue_cluster_queue_immutable(crds: Any, ns: str) -> None:
    doc = {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"name": "it-lq", "namespace": ns},
        "spec": {"clusterQueue": "a"},
    }
    run(crds, "apply", "-f", "-", input=json.dumps(doc))
    doc["spec"]["clusterQueue"] = "b"
    proc = crds.kubectl("apply", "-f", "-", input=json.dumps(doc), check=False)
    assert proc.returncode != 0 and "clusterQueue cannot be changed" in proc.stderr


# --- what the operator writes survives, and reads back the same -------------------------------
@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_workload_spec_and_status_round_trip(crds: Any, ns: str, version: str) -> None:
    """Written and read in one version (v1beta1's through the conversion webhook): nothing
    pruned, nothing rewritten."""
    doc = admitted_workload(ns, "it-admitted")
    model: type = v1beta1.Workload
    if version == "v1beta2":
        doc, model = conversion.convert(doc, conversion.V1BETA2), Workload
    wl = model.model_validate(doc)
    body = wl.to_kube()
    status = body.pop("status")
    run(crds, "create", "-f", "-", input=json.dumps(body))
    run(
        crds,
        "patch",
        f"workloads.{version}.{GROUP}",
        wl.name,
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )
    stored = model.model_validate(get_json(crds, f"workloads.{version}.{GROUP}", wl.name, "-n", ns))
    assert stored.spec == wl.spec  # nothing pruned, nothing rewritten
    assert stored.status == wl.status
    table = run(crds, "get", "kwl", "-n", ns)
    for text in (
        "QUEUE",
        "RESERVED IN",
        "ADMITTED",
        "FINISHED",
        "tas-user-queue",
        "tas-cluster-queue",
    ):
        assert text in table


def test_defaults_applied_by_apiserver(crds: Any, ns: str) -> None:
    doc = workload("it-defaults", ns)
    doc["spec"]["podSets"] = [{"template": {"spec": {"containers": [{"name": "c"}]}}}]
    run(crds, "create", "-f", "-", input=json.dumps(doc))
    stored = get_json(crds, "workload.kueue.x-k8s.io", "it-defaults", "-n", ns)
    assert stored["spec"]["podSets"][0]["name"] == "main"
    assert stored["spec"]["podSets"][0]["count"] == 1
    assert stored["spec"]["active"] is True
    # The pod template is kept as given, unknown fields included.
    assert stored["spec"]["podSets"][0]["template"]["spec"] == {"containers": [{"name": "c"}]}


def test_cluster_queue_status(crds: Any, cleanup: list) -> None:
    cleanup.append((f"clusterqueues.{GROUP}", "it-cq-status"))
    run(
        crds,
        "create",
        "-f",
        "-",
        input=json.dumps(cluster_queue("it-cq-status", {"cpu": 1}, ["cpu"])),
    )
    status = {
        "conditions": [
            {
                "type": "Active",
                "status": "False",
                "reason": "TopologyNotFound",
                "message": "Topology default not found",
                "lastTransitionTime": "2026-11-21T10:00:00Z",
            }
        ],
        "pendingWorkloads": 3,
        "reservingWorkloads": 1,
        "admittedWorkloads": 1,
        "flavorsUsage": [
            {"name": "f", "resources": [{"name": "cpu", "total": "500m", "borrowed": 0}]}
        ],
    }
    run(
        crds,
        "patch",
        f"clusterqueues.{GROUP}",
        "it-cq-status",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )
    cq = ClusterQueue.model_validate(get_json(crds, f"clusterqueues.{GROUP}", "it-cq-status"))
    assert (cq.status.pending_workloads, cq.status.admitted_workloads) == (3, 1)
    assert cq.status.conditions[0].reason == "TopologyNotFound"
    assert cq.status.flavors_usage[0].resources[0].total == "500m"
    line = run(crds, "get", "cq", "it-cq-status", "--no-headers", "-o", "wide").split()
    assert line == ["it-cq-status", "BestEffortFIFO", "3", "1"]  # no cohort: an empty column


# --- kubectl explain ------------------------------------------------------------------------
def test_kubectl_explain_workload_admission(crds: Any) -> None:
    out = eventually(lambda: run(crds, "explain", "workload.status.admission"), timeout=60)
    assert "podSetAssignments" in out and "clusterQueue" in out
    out = run(
        crds,
        "explain",
        "workloads.status.admission.podSetAssignments.topologyAssignment",
        f"--api-version={GROUP}/v1beta1",
    )
    assert "domains" in out and "levels" in out
    out = run(
        crds,
        "explain",
        "workloads.status.admission.podSetAssignments.topologyAssignment",
        f"--api-version={GROUP}/v1beta2",
    )
    assert "\n  slices\t" in out and "\n  domains\t" not in out
    assert "nodeLabel" in run(crds, "explain", "topology.spec.levels")


# --- our own kind: PlacementGroup (tas-operator.io) -------------------------------------------
def placement_group(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "tas-operator.io/v1alpha1",
        "kind": "PlacementGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def test_placement_group_rules_are_enforced_by_the_apiserver(crds: Any, cleanup: list) -> None:
    cleanup.append(("placementgroups.tas-operator.io", "it-pg", "-n", "default"))
    good = placement_group("it-pg", {"partitions": 2, "partitionTopology": RACK})
    eventually(lambda: run(crds, "apply", "-f", "-", input=json.dumps(good)), timeout=30)
    assert "it-pg" in run(crds, "get", "pg", "-n", "default")  # short name and columns

    bad = placement_group("it-pg-bad", {"partitions": 2})
    proc = crds.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert proc.returncode != 0
    assert "partitions and partitionTopology must be set together" in proc.stderr

    too_many = placement_group("it-pg-bad", {"partitions": 65, "partitionTopology": RACK})
    proc = crds.kubectl("apply", "-f", "-", input=json.dumps(too_many), check=False)
    assert proc.returncode != 0 and "spec.partitions" in proc.stderr

    changed = placement_group("it-pg", {"partitions": 3, "partitionTopology": RACK})
    proc = crds.kubectl("apply", "-f", "-", input=json.dumps(changed), check=False)
    assert proc.returncode != 0 and "spec is immutable" in proc.stderr
