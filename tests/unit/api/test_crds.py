"""The generated CRDs: committed and fresh, structural, and with the validation rules we promise.

The CEL rules are also evaluated offline (with cel-python, a dev dependency) on good and bad
objects, so a wrong rule shows up before it meets an apiserver.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml

from tas.api import crdgen
from tas.api.constants import GROUP, HOSTNAME_LABEL

CRD_DIR = Path(__file__).resolve().parents[3] / "crds"
BOTH = ["v1beta1", "v1beta2"]
RENDERED = crdgen.render_all()
CRDS = {name: yaml.safe_load(text) for name, text in RENDERED.items()}

# Server-side defaults we keep on purpose (Kueue has them too); any other default is a bug.
ALLOWED_DEFAULTS = {
    ("clusterqueues", "spec.queueingStrategy"): "BestEffortFIFO",
    ("clusterqueues", "spec.preemption.withinClusterQueue"): "Never",
    ("clusterqueues", "spec.preemption.reclaimWithinCohort"): "Never",
    ("clusterqueues", "spec.preemption.borrowWithinCohort.policy"): "Never",
    ("clusterqueues", "spec.flavorFungibility.whenCanBorrow"): "MayStopSearch",
    ("clusterqueues", "spec.flavorFungibility.whenCanPreempt"): "TryNextFlavor",
    ("clusterqueues", "spec.fairSharing.weight"): 1,  # Kueue's +kubebuilder:default=1
    ("cohorts", "spec.fairSharing.weight"): 1,
    ("localqueues", "spec.fairSharing.weight"): 1,
    ("workloads", "spec.podSets[].name"): "main",
    ("workloads", "spec.podSets[].count"): 1,
    ("workloads", "spec.active"): True,
    ("workloads", "status.admission.podSetAssignments[].name"): "main",
}


def crd(plural: str) -> dict[str, Any]:
    return next(doc for doc in CRDS.values() if doc["spec"]["names"]["plural"] == plural)


def root(plural: str, version: str | None = None) -> dict[str, Any]:
    """A version's schema (the storage version unless named)."""
    versions = crd(plural)["spec"]["versions"]
    (v,) = [v for v in versions if v["name"] == version or (version is None and v["storage"])]
    return v["schema"]["openAPIV3Schema"]


def at(node: dict[str, Any], path: str) -> dict[str, Any]:
    """The schema at a dotted path; `x[]` steps into a list's items."""
    for part in path.split("."):
        node = node["properties"][part.removesuffix("[]")]
        if part.endswith("[]"):
            node = node["items"]
    return node


def walk(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, node
    for name, prop in node.get("properties", {}).items():
        yield from walk(prop, f"{path}.{name}".lstrip("."))
    if isinstance(node.get("items"), dict):
        yield from walk(node["items"], path + "[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk(node["additionalProperties"], path + "{}")


def all_schemas() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for doc in CRDS.values():
        plural = doc["spec"]["names"]["plural"]
        for version in doc["spec"]["versions"]:
            for path, node in walk(version["schema"]["openAPIV3Schema"]):
                yield plural, path, node


# --- committed and fresh ------------------------------------------------------------------------
def test_committed_crds_are_fresh() -> None:
    committed = {p.name: p.read_text() for p in CRD_DIR.glob("*.yaml")}
    assert set(committed) == set(RENDERED), "run `make crds`"
    for name, text in RENDERED.items():
        assert committed[name] == text, f"crds/{name} is stale: run `make crds`"


def test_output_is_deterministic() -> None:
    assert crdgen.render_all() == RENDERED


def test_cli_writes_the_plain_and_the_chart_copies(tmp_path: Path) -> None:
    assert crdgen.main([str(tmp_path / "a"), "--chart", str(tmp_path / "b")]) == 0
    assert {p.name: p.read_text() for p in (tmp_path / "a").iterdir()} == RENDERED
    chart = {p.name: p.read_text() for p in (tmp_path / "b").iterdir()}
    assert chart == crdgen.render_all(chart=True)
    for name, text in chart.items():  # the chart's copy differs only in the client config
        if "conversion" in CRDS[name]["spec"]:
            assert crdgen.CHART_CLIENT_CONFIG in text and text != RENDERED[name]
        else:
            assert text == RENDERED[name]
    assert crdgen.main([]) == 2
    assert crdgen.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 2


# --- names, versions, subresources, columns -----------------------------------------------------
@pytest.mark.parametrize(
    ("plural", "kind", "scope", "short", "versions", "status"),
    [
        ("topologies", "Topology", "Cluster", ["topo"], ["v1alpha1", *BOTH], False),
        ("resourceflavors", "ResourceFlavor", "Cluster", ["flavor", "flavors", "rf"], BOTH, False),
        ("clusterqueues", "ClusterQueue", "Cluster", ["cq"], BOTH, True),
        ("localqueues", "LocalQueue", "Namespaced", ["queue", "queues", "lq"], BOTH, True),
        (
            "workloads",
            "Workload",
            "Namespaced",
            ["kwl", "kueueworkload", "kueueworkloads"],
            BOTH,
            True,
        ),
        ("cohorts", "Cohort", "Cluster", None, BOTH, True),
        ("workloadpriorityclasses", "WorkloadPriorityClass", "Cluster", None, BOTH, False),
    ],
)
def test_names_and_versions(
    plural: str, kind: str, scope: str, short: list[str], versions: list[str], status: bool
) -> None:
    spec = crd(plural)["spec"]
    assert crd(plural)["metadata"]["name"] == f"{plural}.{GROUP}"
    assert spec["group"] == GROUP and spec["scope"] == scope
    names = spec["names"]
    assert (names["kind"], names["listKind"], names["singular"]) == (
        kind,
        f"{kind}List",
        kind.lower(),
    )
    assert names.get("shortNames") == short and names["categories"] == ["kueue"]
    assert [v["name"] for v in spec["versions"]] == versions
    assert all(v["served"] for v in spec["versions"])
    assert [v["name"] for v in spec["versions"] if v["storage"]] == ["v1beta2"]
    assert all(("subresources" in v) == status for v in spec["versions"])
    # Where the versions' schemas differ, the API server asks our webhook; otherwise it only
    # rewrites apiVersion (Kueue's choice per kind: Cohort, though alike here, converts).
    schemas = [v["schema"] for v in spec["versions"]]
    converted = plural in ("workloads", "clusterqueues", "localqueues", "cohorts")
    assert converted or all(s == schemas[0] for s in schemas)
    assert converted == ("conversion" in spec)
    if converted:
        assert spec["conversion"] == {
            "strategy": "Webhook",
            "webhook": {
                "clientConfig": {
                    "service": {
                        "name": "tas-operator-webhook",
                        "namespace": "tas-system",
                        "path": "/convert",
                        "port": 9443,
                    },
                    "url": None,  # applied over a CRD the chart pointed at a URL, it goes
                },
                "conversionReviewVersions": ["v1"],
            },
        }


def columns(plural: str, version: str | None = None) -> dict[str, str]:
    (found,) = [
        v
        for v in crd(plural)["spec"]["versions"]
        if v["name"] == version or (version is None and v["storage"])
    ]
    return {c["name"]: c["jsonPath"] for c in found.get("additionalPrinterColumns", [])}


# Kueue v0.17.0's columns (config/components/crd/bases), per version: what `kubectl get` shows.
KUEUE_COLUMNS = {
    ("workloads", "v1beta2"): {
        "Queue": ".spec.queueName",
        "Reserved in": ".status.admission.clusterQueue",
        "Admitted": ".status.conditions[?(@.type=='Admitted')].status",
        "Finished": ".status.conditions[?(@.type=='Finished')].status",
        "Age": ".metadata.creationTimestamp",
    },
    ("clusterqueues", "v1beta1"): {
        "Cohort": ".spec.cohort",
        "Strategy": ".spec.queueingStrategy",
        "Pending Workloads": ".status.pendingWorkloads",
        "Admitted Workloads": ".status.admittedWorkloads",
    },
    ("clusterqueues", "v1beta2"): {
        "Cohort": ".spec.cohortName",
        "Strategy": ".spec.queueingStrategy",
        "Pending Workloads": ".status.pendingWorkloads",
        "Admitted Workloads": ".status.admittedWorkloads",
    },
    ("localqueues", "v1beta2"): {
        "ClusterQueue": ".spec.clusterQueue",
        "Pending Workloads": ".status.pendingWorkloads",
        "Admitted Workloads": ".status.admittedWorkloads",
    },
    ("workloadpriorityclasses", "v1beta2"): {"Value": ".value"},
    ("cohorts", "v1beta2"): {},
}


@pytest.mark.parametrize(("plural", "version"), sorted(KUEUE_COLUMNS))
def test_printer_columns_are_kueues(plural: str, version: str) -> None:
    assert columns(plural, version) == KUEUE_COLUMNS[plural, version]


def test_printer_columns_beyond_kueue() -> None:
    # Kueue shows no columns for these; ours say where the leaves are.
    assert columns("topologies")["Highest Level"] == ".spec.levels[0].nodeLabel"
    assert columns("topologies")["Lowest Level"] == ".spec.levels[-1:].nodeLabel"
    assert columns("resourceflavors")["Topology"] == ".spec.topologyName"


def test_printer_columns_point_at_fields_that_exist() -> None:
    for name, doc in CRDS.items():
        plural = doc["spec"]["names"]["plural"]
        for version in doc["spec"]["versions"]:
            for path in columns(plural, version["name"]).values():
                fields = path.split("[")[0].strip(".").split(".")
                if fields[0] == "metadata":
                    continue
                node = root(plural, version["name"])
                for f in fields:
                    node = node["properties"][f]
                    node = node.get("items", node)
                assert node, f"{name} {version['name']}: {path}"


# --- structural schema ----------------------------------------------------------------------
FORBIDDEN_KEYS = {
    "$ref",
    "$defs",
    "title",
    "allOf",
    "oneOf",
    "not",
    "const",
    "nullable",
    "examples",
    "discriminator",
}


def test_no_forbidden_keys() -> None:
    for plural, path, node in all_schemas():
        assert not FORBIDDEN_KEYS & set(node), (
            f"{plural} {path}: {sorted(FORBIDDEN_KEYS & set(node))}"
        )
        assert not any(k.startswith("x-tas-") for k in node), f"{plural} {path}: marker left"


def test_every_node_has_a_type() -> None:
    for plural, path, node in all_schemas():
        if node.get("x-kubernetes-int-or-string"):
            assert "type" not in node
            assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], f"{plural} {path}"
            continue
        assert node.get("type") in {"object", "array", "string", "integer", "boolean", "number"}, (
            f"{plural} {path} has no type"
        )
        assert "anyOf" not in node, f"{plural} {path}: anyOf outside int-or-string"


def test_objects_and_arrays_are_well_formed() -> None:
    for plural, path, node in all_schemas():
        if node.get("type") == "array":
            assert isinstance(node.get("items"), dict), f"{plural} {path}: array without items"
        if node.get("type") == "object":
            assert not ("properties" in node and "additionalProperties" in node), f"{plural} {path}"
            for req in node.get("required", []):
                assert req in node.get("properties", {}), f"{plural} {path}: required {req}?"
        if node.get("x-kubernetes-list-type") == "map":
            item = node["items"]
            for key in node["x-kubernetes-list-map-keys"]:
                assert key in item.get("required", []) or "default" in item["properties"][key], (
                    f"{plural} {path}: map key {key} must be required or defaulted"
                )


def test_root_is_kubernetes_shaped() -> None:
    for doc in CRDS.values():
        for version in doc["spec"]["versions"]:
            schema = version["schema"]["openAPIV3Schema"]
            assert schema["type"] == "object"
            assert schema["properties"]["metadata"] == {"type": "object"}
            assert schema["properties"]["apiVersion"]["type"] == "string"
            assert schema["properties"]["kind"]["type"] == "string"
            assert "apiVersion" not in schema.get("required", [])


def test_only_kueues_defaults() -> None:
    found = {
        (plural, path): node["default"] for plural, path, node in all_schemas() if "default" in node
    }
    assert found == ALLOWED_DEFAULTS


def test_quantities_are_int_or_string() -> None:
    quota = at(root("clusterqueues"), "spec.resourceGroups[].flavors[].resources[].nominalQuota")
    usage = at(root("workloads"), "status.admission.podSetAssignments[].resourceUsage")
    for node in (quota, usage["additionalProperties"]):
        assert node["x-kubernetes-int-or-string"] is True
        assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert usage["additionalProperties"]["pattern"].startswith("^(\\+|-)?")
    assert quota["pattern"].startswith("^\\+?(") and quota["minimum"] == 0


def test_pod_template_spec_is_preserved_not_modelled() -> None:
    template = at(root("workloads"), "spec.podSets[].template")
    assert template["properties"]["spec"] == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }


def test_counts_are_non_negative() -> None:
    wl, cq, lq = root("workloads"), root("clusterqueues"), root("localqueues")
    assert at(wl, "spec.podSets[].count")["minimum"] == 0
    assert at(wl, "status.admission.podSetAssignments[].count")["minimum"] == 0
    assignment = "status.admission.podSetAssignments[].topologyAssignment"
    domain = at(root("workloads", "v1beta1"), f"{assignment}.domains[].count")
    assert domain["minimum"] == 1
    assert at(wl, f"{assignment}.slices[].domainCount")["minimum"] == 1
    assert at(wl, f"{assignment}.slices[].podCounts.universal")["minimum"] == 1
    assert at(wl, f"{assignment}.slices[].podCounts.individual[]")["minimum"] == 1
    for schema in (cq, lq):
        for field in ("pendingWorkloads", "reservingWorkloads", "admittedWorkloads"):
            assert at(schema, f"status.{field}")["minimum"] == 0


def test_names_and_label_keys_are_checked() -> None:
    dns = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
    assert at(root("resourceflavors"), "spec.topologyName")["pattern"] == dns
    assert at(root("localqueues"), "spec.clusterQueue")["pattern"] == dns
    assert at(root("workloads"), "spec.queueName")["pattern"] == dns
    assert at(root("clusterqueues"), "spec.resourceGroups[].flavors[].name")["pattern"] == dns
    level = at(root("topologies"), "spec.levels[].nodeLabel")
    assert level["maxLength"] == 316 and level["minLength"] == 1 and "pattern" in level


# --- field for field Kueue's ------------------------------------------------------------------
# Every field path of Kueue's own CRDs with its type (see "source" in the file).
KUEUE_FIELDS = json.loads((Path(__file__).parent / "testdata" / "kueue_fields.json").read_text())
# Served in our v1beta1 under Kueue v1beta2's name (Kueue's v1beta1 has no multi-layer slices).
FROM_KUEUE_V1BETA2 = ".spec.podSets[].topologyRequest.podsetSliceRequiredTopologyConstraints"


def schema_type(node: dict[str, Any]) -> str:
    return node.get("type", "int-or-string" if node.get("x-kubernetes-int-or-string") else "any")


@pytest.mark.parametrize(
    ("kind", "version"), [(k, v) for k in sorted(KUEUE_FIELDS["kinds"]) for v in BOTH]
)
def test_every_field_is_kueues_with_kueues_type(kind: str, version: str) -> None:
    kueue = KUEUE_FIELDS["kinds"][kind]
    (resource,) = [r for r in crdgen.RESOURCES if r.model_fields["kind"].default == kind]
    for path, node in walk(root(resource.crd.plural, version)):
        path = "." + path if path else "."
        if ".template." in path:
            continue  # the pod template is kept as given
        theirs = "v1beta2" if path.startswith(FROM_KUEUE_V1BETA2) else version
        assert path in kueue[theirs], f"{kind} {path} is not a Kueue {theirs} field"
        assert schema_type(node) == kueue[theirs][path], f"{kind} {version} {path}"


# --- validation rules ------------------------------------------------------------------------
def messages(node: dict[str, Any]) -> list[str]:
    return [r["message"] for r in node.get("x-kubernetes-validations", [])]


def test_topology_rules_present() -> None:
    levels = at(root("topologies"), "spec.levels")
    assert (levels["minItems"], levels["maxItems"]) == (1, 16)
    assert levels["x-kubernetes-list-type"] == "atomic"
    got = " | ".join(messages(levels))
    for text in ("immutable", "unique", "can only be the lowest"):
        assert text in got


def test_flavor_rules_present() -> None:
    got = " | ".join(messages(at(root("resourceflavors"), "spec")))
    assert "at least one entry in nodeLabels" in got
    assert "topologyName cannot be changed" in got


def test_every_rule_has_a_message() -> None:
    for plural, path, node in all_schemas():
        for rule in node.get("x-kubernetes-validations", []):
            assert rule["rule"] and len(rule["message"]) > 10, f"{plural} {path}"


# --- the CEL rules, evaluated offline -------------------------------------------------------
def check(node: dict[str, Any], new: Any, old: Any = None) -> list[str]:
    """Messages of the rules at `node` that refuse `new` (updating from `old`, if given).

    Like the apiserver, a rule that mentions oldSelf runs only on update."""
    env = celpy.Environment()
    failed = []
    for rule in node.get("x-kubernetes-validations", []):
        uses_old = "oldSelf" in rule["rule"]
        if uses_old and old is None:
            continue
        activation = {"self": celpy.json_to_cel(new)}
        if uses_old:
            activation["oldSelf"] = celpy.json_to_cel(old)
        result = env.program(env.compile(rule["rule"])).evaluate(activation)
        if result is not True and result != celpy.celtypes.BoolType(True):
            failed.append(rule["message"])
    return failed


def levels(*labels: str) -> list[dict[str, str]]:
    return [{"nodeLabel": x} for x in labels]


BLOCK, RACK = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"


@pytest.mark.parametrize(
    ("new", "old", "message"),
    [
        (levels(BLOCK, RACK, HOSTNAME_LABEL), None, None),
        (levels(BLOCK), None, None),
        (levels(HOSTNAME_LABEL, RACK), None, "can only be the lowest"),
        (levels(BLOCK, RACK, BLOCK), None, "must be unique"),
        (levels(BLOCK, RACK), levels(BLOCK, RACK), None),
        (levels(BLOCK), levels(BLOCK, RACK), "immutable"),
        (levels(RACK, BLOCK), levels(BLOCK, RACK), "immutable"),
        (levels(RACK, HOSTNAME_LABEL), levels(BLOCK, RACK, HOSTNAME_LABEL), None),
        (levels(BLOCK, RACK), levels(BLOCK, HOSTNAME_LABEL), "immutable"),
    ],
    ids=[
        "seed",
        "one-level",
        "hostname-first",
        "duplicate",
        "unchanged",
        "level-removed",
        "levels-swapped",
        "hostname-lowest-both",
        "hostname-dropped",
    ],
)
def test_topology_cel(new: list, old: list | None, message: str | None) -> None:
    failed = check(at(root("topologies"), "spec.levels"), new, old)
    if message is None:
        assert failed == []
    else:
        assert len(failed) == 1 and message in failed[0]


@pytest.mark.parametrize(
    ("new", "old", "message"),
    [
        ({"nodeLabels": {"a": "b"}, "topologyName": "default"}, None, None),
        ({}, None, None),
        ({"topologyName": "default"}, None, "at least one entry in nodeLabels"),
        ({"topologyName": "default", "nodeLabels": {}}, None, "at least one entry in nodeLabels"),
        (
            {"nodeLabels": {"a": "b"}, "topologyName": "other"},
            {"nodeLabels": {"a": "b"}, "topologyName": "default"},
            "cannot be changed",
        ),
        (
            {"nodeLabels": {"a": "b"}},
            {"nodeLabels": {"a": "b"}, "topologyName": "default"},
            "cannot be changed",
        ),
        ({"nodeLabels": {"a": "b"}, "topologyName": "default"}, {"nodeLabels": {"a": "b"}}, None),
    ],
    ids=["tas", "plain", "no-labels", "empty-labels", "renamed", "removed", "added"],
)
def test_flavor_cel(new: dict, old: dict | None, message: str | None) -> None:
    failed = check(at(root("resourceflavors"), "spec"), new, old)
    assert failed == ([] if message is None else [m for m in failed if message in m])
    assert (message is None) == (failed == [])


@pytest.mark.parametrize(
    ("toleration", "ok"),
    [
        ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, True),
        ({"operator": "Exists"}, True),
        ({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}, True),
        ({"value": "v"}, False),
        ({"key": "k", "operator": "Exists", "value": "v"}, False),
        ({"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}, False),
    ],
)
def test_toleration_cel(toleration: dict, ok: bool) -> None:
    node = at(root("resourceflavors"), "spec.tolerations[]")
    assert (check(node, toleration) == []) == ok


@pytest.mark.parametrize(
    ("quota", "ok"),
    [
        (0, True),
        (100, True),
        ("100Gi", True),
        ("+1", True),
        ("1e-3", True),
        (-1, False),
        ("-1Gi", False),
    ],
)
def test_quota_is_never_negative(quota: int | str, ok: bool) -> None:
    # By minimum and pattern rather than CEL: a rule here costs too much (see the model).
    node = at(root("clusterqueues"), "spec.resourceGroups[].flavors[].resources[].nominalQuota")
    assert "x-kubernetes-validations" not in node
    if isinstance(quota, int):
        assert (quota >= node["minimum"]) == ok
    else:
        assert (re.fullmatch(node["pattern"], quota) is not None) == ok


def test_resource_group_cel() -> None:
    node = at(root("clusterqueues"), "spec.resourceGroups[]")
    good = {
        "coveredResources": ["cpu", "memory"],
        "flavors": [{"name": "f", "resources": [{"name": "cpu"}, {"name": "memory"}]}],
    }
    bad = {
        "coveredResources": ["cpu", "memory"],
        "flavors": [{"name": "f", "resources": [{"name": "cpu"}]}],
    }
    assert check(node, good) == []
    assert check(node, bad) == [
        "each flavor must list exactly as many resources as coveredResources"
    ]


def test_local_queue_cel() -> None:
    node = at(root("localqueues"), "spec.clusterQueue")
    assert check(node, "a", "a") == []
    assert check(node, "b", "a") == ["clusterQueue cannot be changed"]


@pytest.mark.parametrize(
    ("request_", "ok"),
    [
        ({"required": "rack"}, True),
        ({"preferred": "rack", "unconstrained": False}, True),
        ({"podSetSliceRequiredTopology": "rack", "podSetSliceSize": 2}, True),
        ({"podsetSliceRequiredTopologyConstraints": [{"topology": "rack", "size": 2}]}, True),
        ({"required": "rack", "preferred": "block"}, False),
        ({"required": "rack", "unconstrained": True}, False),
        ({"podSetSliceRequiredTopology": "rack"}, False),
        ({"podSetSliceSize": 2}, False),
        (
            {
                "podSetSliceRequiredTopology": "rack",
                "podSetSliceSize": 2,
                "podsetSliceRequiredTopologyConstraints": [{"topology": "rack", "size": 2}],
            },
            False,
        ),
    ],
)
def test_topology_request_cel(request_: dict, ok: bool) -> None:
    node = at(root("workloads"), "spec.podSets[].topologyRequest")
    assert (check(node, request_) == []) == ok


def reserved_workload(pod_sets: int, assignments: int, queue: str = "q") -> dict[str, Any]:
    return {
        "spec": {"queueName": queue, "podSets": [{"name": f"p{i}"} for i in range(pod_sets)]},
        "status": {
            "conditions": [{"type": "QuotaReserved", "status": "True"}],
            "admission": {"podSetAssignments": [{"name": f"p{i}"} for i in range(assignments)]},
        },
    }


def test_workload_cel() -> None:
    wl = root("workloads")
    assert check(wl, reserved_workload(2, 2)) == []
    assert check(wl, {"spec": {"podSets": [{}]}}) == []
    assert check(wl, reserved_workload(2, 1)) == [
        "status.admission.podSetAssignments must have one entry per spec.podSets entry"
    ]
    assert check(wl, reserved_workload(1, 1, "other"), reserved_workload(1, 1)) == [
        "queueName cannot change while the workload holds a quota reservation"
    ]
    podset = at(wl, "spec.podSets[]")
    assert check(podset, {"count": 3, "minCount": 2}) == []
    assert check(podset, {"count": 1, "minCount": 2}) == ["minCount must not exceed count"]
    assert check(at(root("workloads", "v1beta1"), "spec"), {"priorityClassName": "high"}) == [
        "priority must be set when priorityClassName is set"
    ]
    ref = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}
    assert check(at(wl, "spec"), {"priorityClassRef": ref}) == [
        "priority must be set when priorityClassRef is set"
    ]
    assert check(at(wl, "spec"), {"priorityClassRef": ref, "priority": 5}) == []
    node = at(wl, "spec.priorityClassRef")
    assert check(node, {**ref, "kind": "PriorityClass"}) == [
        "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group"
    ]
    assert check(node, {**ref, "group": "scheduling.k8s.io"}) == [
        "only the PriorityClass kind is allowed for the scheduling.k8s.io group"
    ]


def one_slice(domains: int, roots: int, counts: int) -> dict[str, Any]:
    return {
        "domainCount": domains,
        "valuesPerLevel": [
            {"individual": {"prefix": "n-", "roots": [str(i) for i in range(roots)]}}
        ],
        "podCounts": {"individual": [1] * counts},
    }


def test_topology_assignment_cel() -> None:
    """Kueue's rules on the compact encoding, each refusing what it should."""
    node = at(root("workloads"), "status.admission.podSetAssignments[].topologyAssignment")
    ok = {"levels": [HOSTNAME_LABEL], "slices": [one_slice(2, 2, 2)]}
    assert check(node, ok) == []
    assert check(node, {**ok, "levels": ["a", HOSTNAME_LABEL]}) == [
        "valuesPerLevel must have the same length as the number of levels in this "
        "TopologyAssignment"
    ]
    slice_node = node["properties"]["slices"]["items"]
    assert check(slice_node, one_slice(2, 2, 2)) == []
    assert check(slice_node, one_slice(2, 2, 3)) == [
        "podCounts.individual must have length equal to domainCount"
    ]
    assert len(check(slice_node, one_slice(2, 3, 2))) == 1
    one_of = "exactly one of the fields in [universal individual] must be set"
    counts = slice_node["properties"]["podCounts"]
    assert check(counts, {"universal": 2}) == []
    assert check(counts, {}) == [one_of]
    assert check(counts, {"universal": 1, "individual": [1]}) == [one_of]
    values = slice_node["properties"]["valuesPerLevel"]["items"]
    assert check(values, {"universal": "a"}) == []
    assert check(values, {"universal": "a", "individual": {"roots": ["a"]}}) == [one_of]


def test_placement_group_cel() -> None:
    node = at(root("placementgroups"), "spec")
    assert check(node, {"partitions": 2, "partitionTopology": "rack"}) == []
    assert check(node, {"affinityTopology": "rack"}) == []
    assert check(node, {"partitions": 2}) == [
        "partitions and partitionTopology must be set together"
    ]
    assert check(node, {"partitionTopology": "rack"}) == [
        "partitions and partitionTopology must be set together"
    ]
    unchanged = {"affinityTopology": "rack"}
    assert check(node, unchanged, unchanged) == []
    assert check(node, {"affinityTopology": "block"}, unchanged) == [
        "spec is immutable: the members are placed by it"
    ]
    partitions = at(root("placementgroups"), "spec.partitions")
    assert partitions["minimum"] == 1 and partitions["maximum"] == 64
