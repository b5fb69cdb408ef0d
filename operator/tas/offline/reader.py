"""The strict reader of a scenario (the contract: docs/reference/scenario-format.md): a loaded document is checked
in full and turned into solver inputs, or refused with one ScenarioError naming the field."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tas import features
from tas.api import fairsharing
from tas.api.annotations import (
    TopologyRequestError,
    label_key_problem,
    parse_topology_request,
    validate_levels,
    validate_pod_set_groups,
)
from tas.api.constants import ALLOW_EXCLUSIVE_PLACEMENT_GROUPS, is_draining
from tas.api.fairsharing import FairSharingConfig
from tas.api.podrequests import numa_shape, pod_requests
from tas.api.quantity import parse_quantity
from tas.api.relaxation import Stage, parse_relaxation, validate_relaxation_levels
from tas.features import Gate
from tas.offline.fields import (
    ScenarioError,
    expect,
    join_path,
    key_path,
    quantities,
    read_field,
    string_map,
)
from tas.solver.types import (
    CONTAINER_SCOPE,
    HOSTNAME_LEVEL,
    POD_SCOPE,
    PODS,
    FlavorSpec,
    Node,
    NodeNuma,
    NumaZone,
    PodSetRequest,
    SolverOptions,
    Taint,
    Toleration,
)

DEFAULT_PODS_PER_NODE = 110
MAX_LEVELS = 16
MAX_COUNT = 2**31 - 1  # a Kueue pod set count is an int32
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")


@dataclass(frozen=True)
class Workload:
    name: str
    podsets: tuple[PodSetRequest, ...]
    cluster_queue: str | None = None  # with clusterQueues: the queue it is submitted to
    priority: int = 0
    running: bool = False  # admitted before the scenario starts: it never preempts
    # podset-topology-relaxation stages by pod set (ours): used with TASTopologyRelaxation
    relaxations: Mapping[str, tuple[Stage, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    levels: tuple[str, ...]
    flavor: FlavorSpec
    options: SolverOptions
    nodes: tuple[Node, ...]
    workloads: tuple[Workload, ...]
    # With clusterQueues the workloads go through the operator's admission decision (quota,
    # cohorts, preemption): Kueue-shaped ClusterQueue and Cohort objects, checked.
    cluster_queues: tuple[Mapping[str, Any], ...] = ()
    cohorts: tuple[Mapping[str, Any], ...] = ()
    # The scenario's featureGates: active while its annotations are read and its workloads
    # are decided, as the operator's are (the solver takes `options` instead).
    gates: features.FeatureGates = field(default_factory=features.defaults)
    # Kueue's fairSharing and admissionFairSharing sections (off when absent).
    fair_sharing: FairSharingConfig = field(default_factory=FairSharingConfig)


# ---------------------------------------------------------------------------------------------
# The sections of a scenario.


def topology_levels(document: Mapping[str, Any]) -> tuple[str, ...]:
    topology = read_field(document, "topology", dict, "")
    entries = read_field(topology, "levels", list, "topology")
    if not 1 <= len(entries) <= MAX_LEVELS:
        raise ScenarioError(
            "topology.levels", f"must have 1 to {MAX_LEVELS} levels, got {len(entries)}"
        )
    levels: list[str] = []
    for index, entry in enumerate(entries):
        path = f"topology.levels[{index}]"
        label = read_field(expect(entry, dict, path), "nodeLabel", str, path)
        problem = label_key_problem(label)
        if problem is not None:
            raise ScenarioError(f"{path}.nodeLabel", f"{json.dumps(label)} {problem}")
        if label in levels:
            raise ScenarioError(f"{path}.nodeLabel", f"{json.dumps(label)} appears twice")
        levels.append(label)
    if HOSTNAME_LEVEL in levels[:-1]:
        index = levels.index(HOSTNAME_LEVEL)
        raise ScenarioError(
            f"topology.levels[{index}].nodeLabel",
            f"{json.dumps(HOSTNAME_LEVEL)} may only be the lowest level",
        )
    return tuple(levels)


def _taints(value: Any, path: str) -> tuple[Taint, ...]:
    taints = []
    for index, entry in enumerate(expect(value, list, path)):
        item_path = f"{path}[{index}]"
        entry = expect(entry, dict, item_path)
        effect = read_field(entry, "effect", str, item_path)
        if effect not in TAINT_EFFECTS:
            raise ScenarioError(
                f"{item_path}.effect", f"must be one of {', '.join(TAINT_EFFECTS)}, got {effect!r}"
            )
        taints.append(
            Taint(
                key=read_field(entry, "key", str, item_path),
                effect=effect,
                value=read_field(entry, "value", str, item_path, ""),
            )
        )
    return tuple(taints)


def _tolerations(value: Any, path: str) -> tuple[Toleration, ...]:
    tolerations = []
    for index, entry in enumerate(expect(value, list, path)):
        item_path = f"{path}[{index}]"
        entry = expect(entry, dict, item_path)
        key = read_field(entry, "key", str, item_path, "")
        operator = read_field(entry, "operator", str, item_path, "Equal")
        toleration_value = read_field(entry, "value", str, item_path, "")
        effect = read_field(entry, "effect", str, item_path, "")
        seconds = read_field(entry, "tolerationSeconds", int, item_path, None)
        if operator not in TOLERATION_OPERATORS:
            raise ScenarioError(
                f"{item_path}.operator", f"must be Equal or Exists, got {operator!r}"
            )
        if operator == "Exists" and toleration_value:
            raise ScenarioError(f"{item_path}.value", "must be empty when operator is Exists")
        if not key and operator != "Exists":
            raise ScenarioError(f"{item_path}.operator", "must be Exists when key is empty")
        if effect and effect not in TAINT_EFFECTS:
            raise ScenarioError(
                f"{item_path}.effect", f"must be empty or one of {', '.join(TAINT_EFFECTS)}"
            )
        tolerations.append(Toleration(key, operator, toleration_value, effect, seconds))
    return tuple(tolerations)


def _flavor(document: Mapping[str, Any]) -> FlavorSpec:
    flavor = read_field(document, "resourceFlavor", dict, "", {})
    return FlavorSpec(
        node_labels=string_map(
            read_field(flavor, "nodeLabels", dict, "resourceFlavor", {}),
            "resourceFlavor.nodeLabels",
        ),
        tolerations=_tolerations(
            read_field(flavor, "tolerations", list, "resourceFlavor", []),
            "resourceFlavor.tolerations",
        ),
    )


def _gates(document: Mapping[str, Any]) -> features.FeatureGates:
    values = read_field(document, "featureGates", dict, "", {})
    for name, value in values.items():
        try:
            features.from_mapping({name: value})
        except features.FeatureGateError as error:
            raise ScenarioError(key_path("featureGates", str(name)), str(error)) from None
    try:
        return features.from_mapping(values)
    except features.FeatureGateError as error:  # two names of one gate, set differently
        raise ScenarioError("featureGates", str(error)) from None


def _numa(value: Any, path: str) -> NodeNuma:
    """A node's NUMA zones, as a NodeResourceTopology with the single-numa-node policy
    reports them."""
    entry = expect(value, dict, path)
    scope = read_field(entry, "scope", str, path, CONTAINER_SCOPE)
    if scope not in (CONTAINER_SCOPE, POD_SCOPE):
        raise ScenarioError(
            f"{path}.scope", f"must be {CONTAINER_SCOPE!r} or {POD_SCOPE!r}, got {scope!r}"
        )
    zones: list[NumaZone] = []
    for index, item in enumerate(read_field(entry, "zones", list, path)):
        zone_path = f"{path}.zones[{index}]"
        item = expect(item, dict, zone_path)
        name = read_field(item, "name", str, zone_path)
        if not name or name in {z.name for z in zones}:
            raise ScenarioError(f"{zone_path}.name", f"zone name {name!r} is empty or repeated")
        available = read_field(item, "available", dict, zone_path)
        zones.append(NumaZone(name, quantities(available, f"{zone_path}.available")))
    if not zones:
        raise ScenarioError(f"{path}.zones", "must have at least one zone")
    return NodeNuma(scope=scope, zones=tuple(zones))


def _containers(value: Any, path: str) -> list[dict[str, Any]]:
    """Kubernetes containers, only their names and resources (requests, limits)."""
    out = []
    for index, item in enumerate(expect(value, list, path)):
        item_path = f"{path}[{index}]"
        item = expect(item, dict, item_path)
        resources = read_field(item, "resources", dict, item_path, {})
        checked: dict[str, Any] = {}
        for kind in ("requests", "limits"):
            given = read_field(resources, kind, dict, f"{item_path}.resources", {})
            quantities(given, f"{item_path}.resources.{kind}")
            checked[kind] = given
        out.append(
            {"name": read_field(item, "name", str, item_path, f"c{index}"), "resources": checked}
        )
    if not out:
        raise ScenarioError(path, "must have at least one container")
    return out


def _nodes(document: Mapping[str, Any], numa_zones: bool = False) -> tuple[Node, ...]:
    nodes: list[Node] = []
    for path, entry, name in _named(document, "nodes", "node", required=True):
        allocatable = quantities(
            read_field(entry, "allocatable", dict, path), f"{path}.allocatable"
        )
        allocatable.setdefault(PODS, DEFAULT_PODS_PER_NODE * 1000)
        labels = string_map(read_field(entry, "labels", dict, path), f"{path}.labels")
        nodes.append(
            Node(
                name=name,
                labels=labels,
                allocatable=allocatable,
                usage=quantities(read_field(entry, "usage", dict, path, {}), f"{path}.usage"),
                taints=_taints(read_field(entry, "taints", list, path, []), f"{path}.taints"),
                ready=read_field(entry, "ready", bool, path, True),
                unschedulable=read_field(entry, "unschedulable", bool, path, False),
                # checked always; used only with the gate on, as the operator does
                numa=zones if (zones := _optional_numa(entry, path)) and numa_zones else None,
                draining=is_draining(labels),
            )
        )
    return tuple(nodes)


def _optional_numa(entry: Mapping[str, Any], path: str) -> NodeNuma | None:
    if entry.get("numa") is None:
        return None
    return _numa(entry["numa"], f"{path}.numa")


def _podset(entry: Any, path: str, levels: Sequence[str]) -> PodSetRequest:
    entry = expect(entry, dict, path)
    name = read_field(entry, "name", str, path)
    count = read_field(entry, "count", int, path)
    if not 1 <= count <= MAX_COUNT:
        raise ScenarioError(f"{path}.count", f"must be between 1 and {MAX_COUNT}, got {count}")
    spec = None
    if entry.get("containers") is not None:
        spec = {"containers": _containers(entry["containers"], f"{path}.containers")}
    default_requests = pod_requests(spec) if spec and "requests" not in entry else {}
    requests = quantities(read_field(entry, "requests", dict, path, {}), f"{path}.requests")
    requests = requests or default_requests
    if PODS in requests:
        raise ScenarioError(
            key_path(f"{path}.requests", PODS), "is implicit (every pod takes 1) and may not be set"
        )
    annotations = string_map(
        read_field(entry, "annotations", dict, path, {}), f"{path}.annotations"
    )
    try:
        topology = parse_topology_request(
            annotations,
            count,
        )
        validate_levels(topology, levels, annotations)
    except TopologyRequestError as error:
        raise ScenarioError(
            key_path(f"{path}.annotations", error.annotation), error.detail
        ) from None
    return PodSetRequest(
        name=name,
        count=count,
        requests=requests,
        topology=topology,
        node_selector=string_map(
            read_field(entry, "nodeSelector", dict, path, {}), f"{path}.nodeSelector"
        ),
        tolerations=_tolerations(
            read_field(entry, "tolerations", list, path, []), f"{path}.tolerations"
        ),
        numa=numa_shape(spec) if spec else None,
    )


SCENARIO_FLAVOR = "default"  # the scenario's one ResourceFlavor, as ClusterQueues name it
PREEMPTION_POLICIES = {
    "withinClusterQueue": ("Never", "LowerPriority", "LowerOrNewerEqualPriority"),
    "reclaimWithinCohort": ("Never", "LowerPriority", "Any"),
}
BORROW_POLICIES = ("Never", "LowerPriority")
INT32 = (-(2**31), 2**31 - 1)


def _quota_groups(entry: Mapping[str, Any], path: str, borrowing_allowed: bool) -> list[dict]:
    """nominalQuota / borrowingLimit / lendingLimit (resource -> quantity) as one Kueue resource
    group of the scenario's flavor."""
    nominal = quantities(read_field(entry, "nominalQuota", dict, path, {}), f"{path}.nominalQuota")
    limits = {}
    for key in ("borrowingLimit", "lendingLimit"):
        limits[key] = quantities(read_field(entry, key, dict, path, {}), join_path(path, key))
        for resource, value in limits[key].items():
            if resource not in nominal:
                raise ScenarioError(key_path(join_path(path, key), resource), "has no nominalQuota")
            if key == "lendingLimit" and value > nominal[resource]:
                raise ScenarioError(
                    key_path(join_path(path, key), resource), "must not exceed the nominalQuota"
                )
    if limits["borrowingLimit"] and not borrowing_allowed:
        raise ScenarioError(
            f"{path}.borrowingLimit", "borrowingLimit must be nil when cohort is empty"
        )
    if not nominal:
        return []
    resources = []
    for resource, value in nominal.items():
        quota = {"name": resource, "nominalQuota": f"{value}m"}
        for key in ("borrowingLimit", "lendingLimit"):
            if resource in limits[key]:
                quota[key] = f"{limits[key][resource]}m"
        resources.append(quota)
    return [
        {
            "coveredResources": list(nominal),
            "flavors": [{"name": SCENARIO_FLAVOR, "resources": resources}],
        }
    ]


def _preemption(value: Any, path: str) -> dict:
    policies = expect(value, dict, path)
    out: dict[str, Any] = {}
    for key, allowed in PREEMPTION_POLICIES.items():
        policy = read_field(policies, key, str, path, "Never")
        if policy not in allowed:
            raise ScenarioError(join_path(path, key), f"must be one of {', '.join(allowed)}")
        out[key] = policy
    borrow = read_field(policies, "borrowWithinCohort", dict, path, None)
    if borrow is not None:
        borrow_path = f"{path}.borrowWithinCohort"
        policy = read_field(borrow, "policy", str, borrow_path, "Never")
        if policy not in BORROW_POLICIES:
            raise ScenarioError(f"{borrow_path}.policy", "must be Never or LowerPriority")
        if policy != "Never" and out["reclaimWithinCohort"] == "Never":
            raise ScenarioError(
                borrow_path, "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"
            )
        out["borrowWithinCohort"] = {"policy": policy}
        threshold = read_field(borrow, "maxPriorityThreshold", int, borrow_path, None)
        if threshold is not None:
            out["borrowWithinCohort"]["maxPriorityThreshold"] = threshold
    return out


def _named(document: Mapping[str, Any], key: str, kind: str, required: bool = False):
    """(path, entry, name) for each entry of the list `key`; a name may appear once."""
    seen: set[str] = set()
    for index, entry in enumerate(read_field(document, key, list, "", ... if required else [])):
        path = f"{key}[{index}]"
        entry = expect(entry, dict, path)
        name = read_field(entry, "name", str, path)
        if name in seen:
            raise ScenarioError(f"{path}.name", f"{kind} {name!r} appears twice")
        seen.add(name)
        yield path, entry, name


def _cluster_queues(document: Mapping[str, Any]) -> tuple[dict, ...]:
    queues = []
    for path, entry, name in _named(document, "clusterQueues", "ClusterQueue"):
        cohort = _cohort_name(entry, path)
        spec: dict[str, Any] = {
            "namespaceSelector": {},
            "resourceGroups": _quota_groups(entry, path, cohort is not None),
            "preemption": _preemption(
                read_field(entry, "preemption", dict, path, {}), f"{path}.preemption"
            ),
        }
        if cohort:
            spec["cohortName"] = cohort
        _with_weight(spec, entry, path)
        metadata: dict[str, Any] = {"name": name}
        if read_field(entry, "allowExclusivePlacementGroups", bool, path, False):
            metadata["annotations"] = {ALLOW_EXCLUSIVE_PLACEMENT_GROUPS: "true"}
        queues.append({"metadata": metadata, "spec": spec})
    return tuple(queues)


def _cohort_name(entry: Mapping[str, Any], path: str) -> str | None:
    """`cohortName` (Kueue v1beta2) or `cohort` (v1beta1), not two different ones."""
    old = read_field(entry, "cohort", str, path, None)
    new = read_field(entry, "cohortName", str, path, None)
    if old is not None and new is not None and old != new:
        raise ScenarioError(f"{path}.cohortName", f"differs from cohort {old!r}")
    return new if new is not None else old


def _cohorts(document: Mapping[str, Any]) -> tuple[dict, ...]:
    cohorts = []
    for path, entry, name in _named(document, "cohorts", "Cohort"):
        spec: dict[str, Any] = {"resourceGroups": _quota_groups(entry, path, True)}
        parent = read_field(entry, "parentName", str, path, None)
        if parent:
            spec["parentName"] = parent
        _with_weight(spec, entry, path)
        cohorts.append({"metadata": {"name": name}, "spec": spec})
    return tuple(cohorts)


def _with_weight(spec: dict[str, Any], entry: Mapping[str, Any], path: str) -> None:
    """`fairSharing.weight` of a ClusterQueue or Cohort: a quantity >= 0, kept as written."""
    section = read_field(entry, "fairSharing", dict, path, None)
    if section is None:
        return
    where = join_path(path, "fairSharing")
    unknown = set(section) - {"weight"}
    if unknown:
        raise ScenarioError(join_path(where, sorted(unknown)[0]), "unknown field")
    weight = section.get("weight")
    if weight is None:
        return
    try:
        value = parse_quantity(weight)
    except ValueError as error:
        raise ScenarioError(join_path(where, "weight"), str(error)) from None
    if value < 0:
        raise ScenarioError(join_path(where, "weight"), "must be greater than or equal to 0")
    spec["fairSharing"] = {"weight": weight}


def _fair_sharing(document: Mapping[str, Any]) -> FairSharingConfig:
    """The top-level `fairSharing` and `admissionFairSharing`, as Kueue's Configuration has
    them (v1beta2: the fairSharing section turns fair sharing on)."""
    sections = {k: document[k] for k in ("fairSharing", "admissionFairSharing") if k in document}
    try:
        return fairsharing.parse(sections)
    except ValueError as error:
        where, _, detail = str(error).partition(": ")
        raise ScenarioError(where, detail or str(error)) from None


def _workloads(document: Mapping[str, Any], levels: Sequence[str]) -> tuple[Workload, ...]:
    workloads: list[Workload] = []
    for path, entry, name in _named(document, "workloads", "workload", required=True):
        entries = read_field(entry, "podSets", list, path)
        if not entries:
            raise ScenarioError(f"{path}.podSets", "must have at least one pod set")
        podsets = tuple(
            _podset(item, f"{path}.podSets[{i}]", levels) for i, item in enumerate(entries)
        )
        names = [podset.name for podset in podsets]
        for i, podset_name in enumerate(names):
            if podset_name in names[:i]:
                raise ScenarioError(
                    f"{path}.podSets[{i}].name", f"pod set {podset_name!r} appears twice"
                )
        try:
            validate_pod_set_groups(podsets)
        except TopologyRequestError as error:
            podset_path = f"{path}.podSets[{error.podset_index}].annotations"
            raise ScenarioError(key_path(podset_path, error.annotation), error.detail) from None
        relaxations = {
            podset.name: stages
            for i, (podset, item) in enumerate(zip(podsets, entries, strict=True))
            if (stages := _relaxation(item, f"{path}.podSets[{i}]", levels))
        }
        priority = read_field(entry, "priority", int, path, 0)
        if not INT32[0] <= priority <= INT32[1]:
            raise ScenarioError(f"{path}.priority", "must be a 32-bit integer")
        workloads.append(
            Workload(
                name=name,
                podsets=podsets,
                cluster_queue=read_field(entry, "clusterQueue", str, path, None),
                priority=priority,
                running=read_field(entry, "running", bool, path, False),
                relaxations=relaxations,
            )
        )
    return tuple(workloads)


def _relaxation(entry: Mapping[str, Any], path: str, levels: Sequence[str]) -> tuple[Stage, ...]:
    """A pod set's podset-topology-relaxation stages, checked whatever the gate (as the
    webhook checks them); the annotations are already read by _podset."""
    try:
        stages = parse_relaxation(entry.get("annotations") or {})
        validate_relaxation_levels(stages, levels)
    except TopologyRequestError as error:
        raise ScenarioError(
            key_path(f"{path}.annotations", error.annotation), error.detail
        ) from None
    return stages


def parse_scenario(document: Any) -> Scenario:
    """Check a loaded scenario document in full and turn it into solver inputs."""
    document = expect(document, dict, "(document)")
    levels = topology_levels(document)
    gates = _gates(document)
    queues = _cluster_queues(document)
    cohorts = _cohorts(document)
    fair = _fair_sharing(document)
    if (fair.fair_sharing or fair.admission_fair_sharing) and not queues:
        key = "fairSharing" if fair.fair_sharing else "admissionFairSharing"
        raise ScenarioError(key, "needs clusterQueues")
    with features.activated(gates):  # the annotations are read under the scenario's gates
        workloads = _workloads(document, levels)
    names = [q["metadata"]["name"] for q in queues]
    for index, workload in enumerate(workloads):
        if queues and workload.cluster_queue is None and len(queues) > 1:
            raise ScenarioError(
                f"workloads[{index}].clusterQueue", "is required when there are several"
            )
        if workload.cluster_queue is not None and workload.cluster_queue not in names:
            raise ScenarioError(
                f"workloads[{index}].clusterQueue",
                f"ClusterQueue {workload.cluster_queue!r} is not in clusterQueues",
            )
    if cohorts and not queues:
        raise ScenarioError("cohorts", "need clusterQueues")
    parents = {c["metadata"]["name"]: c["spec"].get("parentName") for c in cohorts}
    for index, cohort in enumerate(cohorts):
        seen, name = set(), cohort["metadata"]["name"]
        while name is not None:
            if name in seen:
                raise ScenarioError(f"cohorts[{index}].parentName", "the parents form a cycle")
            seen.add(name)
            name = parents.get(name)
    return Scenario(
        levels=levels,
        flavor=_flavor(document),
        options=gates.solver_options(),
        nodes=_nodes(document, gates.enabled(Gate.TAS_NUMA_ZONES)),
        workloads=workloads,
        cluster_queues=queues,
        cohorts=cohorts,
        gates=gates,
        fair_sharing=fair,
    )
