"""`tas solve FILE`: place a scenario's workloads offline (the contract is SCENARIO.md).

The file is read and checked in full before anything is placed, so a malformed scenario prints
exactly one line on stderr, naming the field, and nothing on stdout. Placement then runs the
solver on one snapshot, keeping the capacity of each admitted workload for the next.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import IO, Any

import yaml

from tas import features
from tas.api import topologyassignment
from tas.api.annotations import (
    TopologyRequestError,
    label_key_problem,
    parse_topology_request,
    validate_levels,
    validate_pod_set_groups,
)
from tas.api.constants import ALLOW_EXCLUSIVE_PLACEMENT_GROUPS
from tas.api.format import format_milli
from tas.api.podrequests import numa_shape, pod_requests
from tas.api.quantity import parse_milli
from tas.features import Gate
from tas.solver import numa
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
    WorkloadPlacement,
)

DEFAULT_PODS_PER_NODE = 110
MAX_LEVELS = 16
MAX_COUNT = 2**31 - 1  # a Kueue pod set count is an int32
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")


class ScenarioError(ValueError):
    """A malformed scenario: `path` is the field (`workloads[1].podSets[0].count`)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")


@dataclass(frozen=True)
class Workload:
    name: str
    podsets: tuple[PodSetRequest, ...]
    cluster_queue: str | None = None  # with clusterQueues: the queue it is submitted to
    priority: int = 0
    running: bool = False  # admitted before the scenario starts: it never preempts


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


# ---------------------------------------------------------------------------------------------
# Small typed readers: each returns the value or raises ScenarioError naming the path.

_TYPE_NAMES = {
    dict: "a mapping",
    list: "a list",
    str: "a string",
    bool: "true or false",
    int: "an integer",
}


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        int: "an integer",
        float: "a number",
    }.get(type(value), type(value).__name__)


def _expect(value: object, kind: type, path: str) -> Any:
    # bool is a subclass of int; a count of `true` is a mistake, not 1.
    wrong_bool = kind is int and isinstance(value, bool)
    if not isinstance(value, kind) or wrong_bool:
        raise ScenarioError(path, f"must be {_TYPE_NAMES[kind]}, got {_describe(value)}")
    return value


def _field(mapping: Mapping[str, Any], key: str, kind: type, path: str, default: Any = ...) -> Any:
    """`mapping[key]` checked to be of `kind`; missing (or null) gives `default`, else an error."""
    child = _join(path, key)
    value = mapping.get(key)
    if value is None:
        if default is ...:
            raise ScenarioError(child, "is required")
        return default
    return _expect(value, kind, child)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _key(path: str, key: str) -> str:
    return f"{path}[{json.dumps(key)}]"


def _check_keys(mapping: Mapping[Any, Any], path: str) -> None:
    for key in mapping:
        if not isinstance(key, str):
            raise ScenarioError(path, f"keys must be strings, got {key!r}")


def _string_map(value: Any, path: str) -> dict[str, str]:
    mapping = _expect(value, dict, path)
    _check_keys(mapping, path)
    for key, item in mapping.items():
        _expect(item, str, _key(path, key))
    return dict(mapping)


def _quantities(value: Any, path: str) -> dict[str, int]:
    mapping = _expect(value, dict, path)
    _check_keys(mapping, path)
    result = {}
    for name, quantity in mapping.items():
        try:
            milli = parse_milli(quantity)
        except ValueError as error:
            raise ScenarioError(_key(path, name), str(error)) from None
        if milli < 0:
            raise ScenarioError(_key(path, name), f"quantity {quantity!r} must not be negative")
        result[name] = milli
    return result


# ---------------------------------------------------------------------------------------------
# The sections of a scenario.


def _levels(document: Mapping[str, Any]) -> tuple[str, ...]:
    topology = _field(document, "topology", dict, "")
    entries = _field(topology, "levels", list, "topology")
    if not 1 <= len(entries) <= MAX_LEVELS:
        raise ScenarioError(
            "topology.levels", f"must have 1 to {MAX_LEVELS} levels, got {len(entries)}"
        )
    levels: list[str] = []
    for index, entry in enumerate(entries):
        path = f"topology.levels[{index}]"
        label = _field(_expect(entry, dict, path), "nodeLabel", str, path)
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
    for index, entry in enumerate(_expect(value, list, path)):
        item_path = f"{path}[{index}]"
        entry = _expect(entry, dict, item_path)
        effect = _field(entry, "effect", str, item_path)
        if effect not in TAINT_EFFECTS:
            raise ScenarioError(
                f"{item_path}.effect", f"must be one of {', '.join(TAINT_EFFECTS)}, got {effect!r}"
            )
        taints.append(
            Taint(
                key=_field(entry, "key", str, item_path),
                effect=effect,
                value=_field(entry, "value", str, item_path, ""),
            )
        )
    return tuple(taints)


def _tolerations(value: Any, path: str) -> tuple[Toleration, ...]:
    tolerations = []
    for index, entry in enumerate(_expect(value, list, path)):
        item_path = f"{path}[{index}]"
        entry = _expect(entry, dict, item_path)
        key = _field(entry, "key", str, item_path, "")
        operator = _field(entry, "operator", str, item_path, "Equal")
        toleration_value = _field(entry, "value", str, item_path, "")
        effect = _field(entry, "effect", str, item_path, "")
        seconds = _field(entry, "tolerationSeconds", int, item_path, None)
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
    flavor = _field(document, "resourceFlavor", dict, "", {})
    return FlavorSpec(
        node_labels=_string_map(
            _field(flavor, "nodeLabels", dict, "resourceFlavor", {}), "resourceFlavor.nodeLabels"
        ),
        tolerations=_tolerations(
            _field(flavor, "tolerations", list, "resourceFlavor", []), "resourceFlavor.tolerations"
        ),
    )


def _gates(document: Mapping[str, Any]) -> features.FeatureGates:
    values = _field(document, "featureGates", dict, "", {})
    for name, value in values.items():
        try:
            features.from_mapping({name: value})
        except features.FeatureGateError as error:
            raise ScenarioError(_key("featureGates", str(name)), str(error)) from None
    try:
        return features.from_mapping(values)
    except features.FeatureGateError as error:  # two names of one gate, set differently
        raise ScenarioError("featureGates", str(error)) from None


def _numa(value: Any, path: str) -> NodeNuma:
    """A node's NUMA zones, as a NodeResourceTopology with the single-numa-node policy
    reports them."""
    entry = _expect(value, dict, path)
    scope = _field(entry, "scope", str, path, CONTAINER_SCOPE)
    if scope not in (CONTAINER_SCOPE, POD_SCOPE):
        raise ScenarioError(
            f"{path}.scope", f"must be {CONTAINER_SCOPE!r} or {POD_SCOPE!r}, got {scope!r}"
        )
    zones: list[NumaZone] = []
    for index, item in enumerate(_field(entry, "zones", list, path)):
        zone_path = f"{path}.zones[{index}]"
        item = _expect(item, dict, zone_path)
        name = _field(item, "name", str, zone_path)
        if not name or name in {z.name for z in zones}:
            raise ScenarioError(f"{zone_path}.name", f"zone name {name!r} is empty or repeated")
        available = _field(item, "available", dict, zone_path)
        zones.append(NumaZone(name, _quantities(available, f"{zone_path}.available")))
    if not zones:
        raise ScenarioError(f"{path}.zones", "must have at least one zone")
    return NodeNuma(scope=scope, zones=tuple(zones))


def _containers(value: Any, path: str) -> list[dict[str, Any]]:
    """Kubernetes containers, only their names and resources (requests, limits)."""
    out = []
    for index, item in enumerate(_expect(value, list, path)):
        item_path = f"{path}[{index}]"
        item = _expect(item, dict, item_path)
        resources = _field(item, "resources", dict, item_path, {})
        checked: dict[str, Any] = {}
        for kind in ("requests", "limits"):
            quantities = _field(resources, kind, dict, f"{item_path}.resources", {})
            _quantities(quantities, f"{item_path}.resources.{kind}")
            checked[kind] = quantities
        out.append(
            {"name": _field(item, "name", str, item_path, f"c{index}"), "resources": checked}
        )
    if not out:
        raise ScenarioError(path, "must have at least one container")
    return out


def _nodes(document: Mapping[str, Any], numa_zones: bool = False) -> tuple[Node, ...]:
    nodes: list[Node] = []
    seen: set[str] = set()
    for index, entry in enumerate(_field(document, "nodes", list, "")):
        path = f"nodes[{index}]"
        entry = _expect(entry, dict, path)
        name = _field(entry, "name", str, path)
        if name in seen:
            raise ScenarioError(f"{path}.name", f"node {name!r} appears twice")
        seen.add(name)
        allocatable = _quantities(_field(entry, "allocatable", dict, path), f"{path}.allocatable")
        allocatable.setdefault(PODS, DEFAULT_PODS_PER_NODE * 1000)
        nodes.append(
            Node(
                name=name,
                labels=_string_map(_field(entry, "labels", dict, path), f"{path}.labels"),
                allocatable=allocatable,
                usage=_quantities(_field(entry, "usage", dict, path, {}), f"{path}.usage"),
                taints=_taints(_field(entry, "taints", list, path, []), f"{path}.taints"),
                ready=_field(entry, "ready", bool, path, True),
                unschedulable=_field(entry, "unschedulable", bool, path, False),
                # checked always; used only with the gate on, as the operator does
                numa=zones if (zones := _optional_numa(entry, path)) and numa_zones else None,
            )
        )
    return tuple(nodes)


def _optional_numa(entry: Mapping[str, Any], path: str) -> NodeNuma | None:
    if entry.get("numa") is None:
        return None
    return _numa(entry["numa"], f"{path}.numa")


def _podset(
    entry: Any, path: str, levels: Sequence[str], gates: features.FeatureGates
) -> PodSetRequest:
    entry = _expect(entry, dict, path)
    name = _field(entry, "name", str, path)
    count = _field(entry, "count", int, path)
    if not 1 <= count <= MAX_COUNT:
        raise ScenarioError(f"{path}.count", f"must be between 1 and {MAX_COUNT}, got {count}")
    spec = None
    if entry.get("containers") is not None:
        spec = {"containers": _containers(entry["containers"], f"{path}.containers")}
    default_requests = pod_requests(spec) if spec and "requests" not in entry else {}
    requests = _quantities(_field(entry, "requests", dict, path, {}), f"{path}.requests")
    requests = requests or default_requests
    if PODS in requests:
        raise ScenarioError(
            _key(f"{path}.requests", PODS), "is implicit (every pod takes 1) and may not be set"
        )
    annotations = _string_map(_field(entry, "annotations", dict, path, {}), f"{path}.annotations")
    try:
        topology = parse_topology_request(
            annotations,
            count,
            multi_layer_enabled=gates.enabled(Gate.TAS_MULTI_LAYER_TOPOLOGY),
            partial_slices_enabled=gates.enabled(Gate.TAS_PARTIAL_SLICES),
            grouped_slicing_enabled=gates.enabled(Gate.TAS_GROUPED_POD_SET_SLICING),
        )
        validate_levels(topology, levels, annotations)
    except TopologyRequestError as error:
        raise ScenarioError(_key(f"{path}.annotations", error.annotation), error.detail) from None
    return PodSetRequest(
        name=name,
        count=count,
        requests=requests,
        topology=topology,
        node_selector=_string_map(
            _field(entry, "nodeSelector", dict, path, {}), f"{path}.nodeSelector"
        ),
        tolerations=_tolerations(
            _field(entry, "tolerations", list, path, []), f"{path}.tolerations"
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
    nominal = _quantities(_field(entry, "nominalQuota", dict, path, {}), f"{path}.nominalQuota")
    limits = {}
    for key in ("borrowingLimit", "lendingLimit"):
        limits[key] = _quantities(_field(entry, key, dict, path, {}), _join(path, key))
        for resource, value in limits[key].items():
            if resource not in nominal:
                raise ScenarioError(_key(_join(path, key), resource), "has no nominalQuota")
            if key == "lendingLimit" and value > nominal[resource]:
                raise ScenarioError(
                    _key(_join(path, key), resource), "must not exceed the nominalQuota"
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
    policies = _expect(value, dict, path)
    out: dict[str, Any] = {}
    for key, allowed in PREEMPTION_POLICIES.items():
        policy = _field(policies, key, str, path, "Never")
        if policy not in allowed:
            raise ScenarioError(_join(path, key), f"must be one of {', '.join(allowed)}")
        out[key] = policy
    borrow = _field(policies, "borrowWithinCohort", dict, path, None)
    if borrow is not None:
        borrow_path = f"{path}.borrowWithinCohort"
        policy = _field(borrow, "policy", str, borrow_path, "Never")
        if policy not in BORROW_POLICIES:
            raise ScenarioError(f"{borrow_path}.policy", "must be Never or LowerPriority")
        if policy != "Never" and out["reclaimWithinCohort"] == "Never":
            raise ScenarioError(
                borrow_path, "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"
            )
        out["borrowWithinCohort"] = {"policy": policy}
        threshold = _field(borrow, "maxPriorityThreshold", int, borrow_path, None)
        if threshold is not None:
            out["borrowWithinCohort"]["maxPriorityThreshold"] = threshold
    return out


def _named(document: Mapping[str, Any], key: str, kind: str):
    """(path, entry, name) for each entry of the list `key`; a name may appear once."""
    seen: set[str] = set()
    for index, entry in enumerate(_field(document, key, list, "", [])):
        path = f"{key}[{index}]"
        entry = _expect(entry, dict, path)
        name = _field(entry, "name", str, path)
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
                _field(entry, "preemption", dict, path, {}), f"{path}.preemption"
            ),
        }
        if cohort:
            spec["cohortName"] = cohort
        metadata: dict[str, Any] = {"name": name}
        if _field(entry, "allowExclusivePlacementGroups", bool, path, False):
            metadata["annotations"] = {ALLOW_EXCLUSIVE_PLACEMENT_GROUPS: "true"}
        queues.append({"metadata": metadata, "spec": spec})
    return tuple(queues)


def _cohort_name(entry: Mapping[str, Any], path: str) -> str | None:
    """`cohortName` (Kueue v1beta2) or `cohort` (v1beta1), not two different ones."""
    old = _field(entry, "cohort", str, path, None)
    new = _field(entry, "cohortName", str, path, None)
    if old is not None and new is not None and old != new:
        raise ScenarioError(f"{path}.cohortName", f"differs from cohort {old!r}")
    return new if new is not None else old


def _cohorts(document: Mapping[str, Any]) -> tuple[dict, ...]:
    cohorts = []
    for path, entry, name in _named(document, "cohorts", "Cohort"):
        spec: dict[str, Any] = {"resourceGroups": _quota_groups(entry, path, True)}
        parent = _field(entry, "parentName", str, path, None)
        if parent:
            spec["parentName"] = parent
        cohorts.append({"metadata": {"name": name}, "spec": spec})
    return tuple(cohorts)


def _workloads(
    document: Mapping[str, Any], levels: Sequence[str], gates: features.FeatureGates
) -> tuple[Workload, ...]:
    workloads: list[Workload] = []
    seen: set[str] = set()
    for index, entry in enumerate(_field(document, "workloads", list, "")):
        path = f"workloads[{index}]"
        entry = _expect(entry, dict, path)
        name = _field(entry, "name", str, path)
        if name in seen:
            raise ScenarioError(f"{path}.name", f"workload {name!r} appears twice")
        seen.add(name)
        entries = _field(entry, "podSets", list, path)
        if not entries:
            raise ScenarioError(f"{path}.podSets", "must have at least one pod set")
        podsets = tuple(
            _podset(item, f"{path}.podSets[{i}]", levels, gates) for i, item in enumerate(entries)
        )
        names = [podset.name for podset in podsets]
        for i, podset_name in enumerate(names):
            if podset_name in names[:i]:
                raise ScenarioError(
                    f"{path}.podSets[{i}].name", f"pod set {podset_name!r} appears twice"
                )
        try:
            validate_pod_set_groups(
                podsets, grouped_slicing_enabled=gates.enabled(Gate.TAS_GROUPED_POD_SET_SLICING)
            )
        except TopologyRequestError as error:
            podset_path = f"{path}.podSets[{error.podset_index}].annotations"
            raise ScenarioError(_key(podset_path, error.annotation), error.detail) from None
        priority = _field(entry, "priority", int, path, 0)
        if not INT32[0] <= priority <= INT32[1]:
            raise ScenarioError(f"{path}.priority", "must be a 32-bit integer")
        workloads.append(
            Workload(
                name=name,
                podsets=podsets,
                cluster_queue=_field(entry, "clusterQueue", str, path, None),
                priority=priority,
                running=_field(entry, "running", bool, path, False),
            )
        )
    return tuple(workloads)


def parse_scenario(document: Any) -> Scenario:
    """Check a loaded scenario document in full and turn it into solver inputs."""
    document = _expect(document, dict, "(document)")
    levels = _levels(document)
    gates = _gates(document)
    queues = _cluster_queues(document)
    cohorts = _cohorts(document)
    workloads = _workloads(document, levels, gates)
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
    )


MAX_BYTES = 256 * 2**20  # far above a 20,480-node scenario (about 10 MB)
MAX_ELEMENTS = 5_000_000  # values in the document once aliases are expanded
MAX_DEPTH = 64  # a scenario nests about 8 deep
# Kubernetes' integers and quantities are 64-bit; Python's are not, and cannot even be printed
# past 4,300 digits (a 4,000-digit YAML hex integer is one line of text).
MAX_INTEGER = 2**63 - 1
MAX_MESSAGE = 1_000  # characters of an error line: a message never echoes a whole input


# libyaml's parser when PyYAML was built with it. It refuses nesting deeper than 1,000 levels
# by itself.
_SafeLoader = getattr(yaml, "CSafeLoader", None) if yaml.__with_libyaml__ else None


class _Loader(_SafeLoader or yaml.SafeLoader):  # type: ignore[misc]
    """YAML's safe loader without its timestamp type: a label value like 2024-13-45 is a
    string here (Kubernetes reads it as one), not an invalid date."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def read_text(path: str) -> str:
    """The file's text, refused past MAX_BYTES as it is read (one read of MAX_BYTES would
    allocate them all, whatever the file's size)."""
    chunks, size = [], 0
    try:
        with open(path, encoding="utf-8") as file:
            while chunk := file.read(1 << 20):
                size += len(chunk)
                if size > MAX_BYTES:
                    raise ScenarioError("(document)", f"larger than {MAX_BYTES // 2**20} MiB")
                chunks.append(chunk)
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(path, f"cannot read: {error}") from None
    return "".join(chunks)


def load_document(text: str) -> Any:
    """JSON when it parses as JSON, else YAML (a superset for everything a scenario holds).
    Hostile documents (deep nesting, alias bombs, numbers of thousands of digits) are refused
    as malformed, like any other."""
    try:
        document = json.loads(text)
    except ValueError:
        document = _load_yaml(text)
    except RecursionError:
        raise ScenarioError("(document)", f"nested deeper than {MAX_DEPTH} levels") from None
    _check_size(document)
    return document


def _load_yaml(text: str) -> Any:
    try:
        try:
            return _load_plain_yaml(text)
        except _NotPlain:
            return yaml.load(text, Loader=_Loader)  # a SafeLoader
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        position = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ScenarioError("(document)", f"not valid YAML or JSON{position}: {problem}") from None
    except RecursionError:
        raise ScenarioError("(document)", f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:  # e.g. an integer of more digits than Python converts
        raise ScenarioError("(document)", f"not a valid value: {error}") from None


class _NotPlain(Exception):
    """The document uses what only the full loader handles (or refuses with its message)."""


_PLAIN_TAGS = {f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null")}
_NO_KEY = object()  # no mapping key read yet
_UNSEEN = object()


def _load_plain_yaml(text: str) -> Any:
    """The safe loader's document, built straight from the parser's events.

    PyYAML's loader first builds a node object per value, then the value from the node: at
    20,480 nodes that is 5 s, the parsing itself 0.4 s. This handles what scenarios hold
    (mappings, sequences, untagged scalars, anchors and aliases) with the loader's own rules
    for scalars, and gives up (`_NotPlain`) on anything else: explicit tags, merge keys,
    several documents, mappings as keys, duplicate or undefined anchors. The full loader then
    reads the text again and answers as it always does.
    """
    loader = _Loader("")
    values: dict[str, Any] = {}  # plain scalar text -> its value (int, bool, str, ...)
    anchors: dict[str, Any] = {}
    open_: list[list[Any]] = []  # [container, pending mapping key]: the containers being built
    document = None
    documents = 0
    for event in yaml.parse(text, Loader=_Loader):
        if type(event) is yaml.ScalarEvent:
            if event.tag is not None:
                raise _NotPlain
            value: Any = event.value
            if event.implicit[0]:  # plain, not quoted: resolved as the loader would
                value = values.get(event.value, _UNSEEN)
                if value is _UNSEEN:
                    value = values[event.value] = _plain_scalar(loader, event.value)
        elif type(event) is yaml.MappingStartEvent or type(event) is yaml.SequenceStartEvent:
            if event.tag is not None:
                raise _NotPlain
            value = {} if type(event) is yaml.MappingStartEvent else []
        elif type(event) is yaml.MappingEndEvent or type(event) is yaml.SequenceEndEvent:
            open_.pop()
            continue
        elif type(event) is yaml.AliasEvent:
            if event.anchor not in anchors:
                raise _NotPlain
            value = anchors[event.anchor]
        else:
            documents += type(event) is yaml.DocumentStartEvent
            if documents > 1:
                raise _NotPlain
            continue
        if type(event) is not yaml.AliasEvent and event.anchor is not None:
            if event.anchor in anchors:
                raise _NotPlain
            anchors[event.anchor] = value
        if not open_:
            document = value
        elif type(open_[-1][0]) is list:
            open_[-1][0].append(value)
        elif open_[-1][1] is _NO_KEY:
            if isinstance(value, dict | list):
                raise _NotPlain  # an unhashable key
            open_[-1][1] = value
        else:
            open_[-1][0][open_[-1][1]] = value
            open_[-1][1] = _NO_KEY
        if type(event) is yaml.MappingStartEvent or type(event) is yaml.SequenceStartEvent:
            open_.append([value, _NO_KEY])
    return document


def _plain_scalar(loader: _Loader, text: str) -> Any:
    tag = loader.resolve(yaml.ScalarNode, text, (True, False))
    if tag not in _PLAIN_TAGS:
        raise _NotPlain  # a merge key (<<) or a value key (=)
    try:
        return loader.yaml_constructors[tag](loader, yaml.ScalarNode(tag, text))
    except ValueError:
        # an integer too long to convert: the full loader reports it, or an error before it
        raise _NotPlain from None


def _check_size(document: Any) -> None:
    """Walk the document once within a budget: aliases may make a small file enormous. An
    integer beyond 64 bits, as a value or a key, is refused here, naming where it is, so that
    nothing after this ever holds one."""
    budget = MAX_ELEMENTS
    stack: list[tuple[Any, int, tuple]] = [(document, 0, ())]
    while stack:
        value, depth, where = stack.pop()
        if depth > MAX_DEPTH:
            raise ScenarioError("(document)", f"nested deeper than {MAX_DEPTH} levels")
        budget -= 1
        if budget < 0:
            raise ScenarioError(
                "(document)", f"more than {MAX_ELEMENTS} values (after expanding aliases)"
            )
        if _huge(value):
            raise ScenarioError(_path(where), f"integer out of range: {_magnitude(value)}")
        if isinstance(value, dict):
            for key, item in value.items():
                if _huge(key):
                    raise ScenarioError(_path(where), f"key out of range: {_magnitude(key)}")
                stack.append((item, depth + 1, (where, key)))
        elif isinstance(value, list):
            stack.extend((item, depth + 1, (where, index)) for index, item in enumerate(value))


def _huge(value: Any) -> bool:
    return type(value) is int and not -MAX_INTEGER - 1 <= value <= MAX_INTEGER


def _magnitude(value: int) -> str:
    return f"an integer of {value.bit_length()} bits (at most 64)"


def _path(where: tuple) -> str:
    """`(((), "nodes"), 0)` -> `nodes[0]`: the chain of keys the walk kept, as a field path."""
    keys = []
    while where:
        where, key = where
        keys.append(key)
    path = ""
    for key in reversed(keys):
        if isinstance(key, int):
            path += f"[{key}]"
        elif isinstance(key, str) and key.replace("_", "").isalnum():
            path = _join(path, key)
        else:
            path = _key(path, str(key))
    return path or "(document)"


@dataclass
class Timings:
    """Where `tas solve` spends its time, in seconds (`--stats`): wall-clock, and the CPU time
    of the process, which other load on the machine hardly changes."""

    parse: float = 0.0  # reading the file, loading YAML or JSON, checking every field
    parse_cpu: float = 0.0
    snapshot: float = 0.0  # the domain tree and capacity arrays, built once
    # per workload: admitted?, then the wall and CPU seconds of finding its assignment plus,
    # when admitted, recording its usage
    placements: list[tuple[bool, float, float]] = field(default_factory=list)


def solve(scenario: Scenario, timings: Timings | None = None) -> dict[str, Any]:
    """Place every workload in order on one snapshot; an admitted one keeps its capacity.
    With ClusterQueues, every workload goes through the operator's admission decision."""
    if scenario.cluster_queues:
        return admit(scenario, timings)
    from tas.solver.snapshot import TopologySnapshot

    started = time.perf_counter()
    snapshot = TopologySnapshot(scenario.levels, scenario.nodes, scenario.flavor, scenario.options)
    snapshot.build()
    nodes = {node.name: node for node in scenario.nodes}
    if timings is not None:
        timings.snapshot = time.perf_counter() - started
    placements = []
    for workload in scenario.workloads:
        started, started_cpu = time.perf_counter(), time.process_time()
        placement = place(snapshot, nodes, workload)
        if timings is not None:
            wall, cpu = time.perf_counter() - started, time.process_time() - started_cpu
            timings.placements.append((placement.admitted, wall, cpu))
        placements.append(placement)
    # The output is built after the placements, so that the garbage collector's passes its
    # objects set off are not timed as placement.
    return {
        "workloads": [
            _result(workload, placement)
            for workload, placement in zip(scenario.workloads, placements, strict=True)
        ]
    }


def place(snapshot: Any, nodes: dict[str, Node], workload: Workload) -> WorkloadPlacement:
    """The workload's placement on the snapshot; when admitted, it holds its capacity there
    (and its NUMA zones in `nodes`) from now on."""
    placement = snapshot.find_assignments(workload.podsets)
    if placement.admitted:
        placement = snapshot.numa_zones(workload.podsets, placement)
        hold(snapshot, nodes, workload, placement)
    return placement


def hold(
    snapshot: Any,
    nodes: dict[str, Node],
    workload: Workload,
    placement: WorkloadPlacement,
    sign: int = 1,
) -> None:
    """Take (sign -1: give back) the capacity and NUMA zones of an admitted placement."""
    requests = {podset.name: podset.requests for podset in workload.podsets}
    for placed in placement.podsets:
        snapshot.add_usage(placed.assignment, requests[placed.name], sign)
    _take_zones(snapshot, nodes, workload, placement, sign)


def _take_zones(
    snapshot: Any,
    nodes: dict[str, Node],
    workload: Workload,
    placement: WorkloadPlacement,
    sign: int = 1,
) -> None:
    """What the operator's cache does after an admission: the zones the placement chose give
    up what its pods align there (sign -1: get it back when the pods leave)."""
    shapes = {podset.name: podset.numa for podset in workload.podsets}
    for placed in placement.podsets:
        shape = shapes[placed.name]
        for host, pods in placed.numa_zones.items():
            node = nodes[host]
            if node.numa is None or shape is None:
                continue
            nodes[host] = replace(node, numa=numa.taken(node.numa, shape, pods, sign))
            snapshot.upsert_node(nodes[host])


def _result(workload: Workload, placement: WorkloadPlacement) -> dict[str, Any]:
    if not placement.admitted:
        return {"name": workload.name, "admitted": False, "message": placement.failure}
    return {
        "name": workload.name,
        "admitted": True,
        "podSets": [
            {
                "name": placed.name,
                "count": placed.count,
                "topologyAssignment": topologyassignment.to_api(
                    placed.assignment, sort_by_values=True
                ),
            }
            | (
                {
                    "numaZones": {
                        host: [list(p) for p in pods] for host, pods in placed.numa_zones.items()
                    }
                }
                if placed.numa_zones
                else {}
            )
            for placed in placement.podsets
        ],
    }


def stats_line(timings: Timings) -> str:
    """`tas solve --stats`: one JSON object on one line, times in milliseconds."""

    def summary(samples: list[tuple[bool, float, float]]) -> dict[str, Any]:
        ordered = sorted(wall for _, wall, _ in samples)
        return {
            "count": len(ordered),
            "total_ms": round(sum(ordered) * 1e3, 3),
            "p50_ms": round(_percentile(ordered, 0.50) * 1e3, 3),
            "p99_ms": round(_percentile(ordered, 0.99) * 1e3, 3),
            "cpu_total_ms": round(sum(cpu for _, _, cpu in samples) * 1e3, 3),
        }

    placements = timings.placements
    stats = {
        "parse_ms": round(timings.parse * 1e3, 1),
        "parse_cpu_ms": round(timings.parse_cpu * 1e3, 1),
        "snapshot_ms": round(timings.snapshot * 1e3, 1),
        "placement": summary(placements),
        "admitted": summary([sample for sample in placements if sample[0]]),
        "rejected": summary([sample for sample in placements if not sample[0]]),
    }
    return json.dumps({"stats": stats})


def _percentile(ordered: list[float], fraction: float) -> float:
    """Nearest rank: with few samples p99 is (close to) the maximum; 0 without samples."""
    if not ordered:
        return 0.0
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def main(path: str, stdout: IO[str], stderr: IO[str], stats: bool = False) -> int:
    """Exit 0 with JSON on stdout (not fitting is an answer), or 1 with one line on stderr.
    With `stats`, a successful run also prints `stats_line` on stderr."""
    started, started_cpu = time.perf_counter(), time.process_time()
    try:
        scenario = parse_scenario(load_document(read_text(path)))
        timings = Timings(
            parse=time.perf_counter() - started, parse_cpu=time.process_time() - started_cpu
        )
        # A `running` workload that does not fit is found only while deciding.
        result = solve(scenario, timings)
    except ScenarioError as error:
        stderr.write(error_line(error) + "\n")
        return 1
    stdout.write(json.dumps(result, indent=2) + "\n")
    if stats:
        stderr.write(stats_line(timings) + "\n")
    return 0


def error_line(error: ScenarioError) -> str:
    """A malformed file's one line on stderr, whatever the message holds, and not too long."""
    line = " ".join(str(error).split())
    if len(line) > MAX_MESSAGE:
        line = line[:MAX_MESSAGE] + f"... ({len(line)} characters)"
    return line


# ---------------------------------------------------------------------------------------------
# With clusterQueues: the operator's own admission decision, offline.

SCENARIO_NAMESPACE = "scenario"
SCENARIO_TOPOLOGY = "scenario"
_EPOCH = datetime(2000, 1, 1)


def admit(scenario: Scenario, timings: Timings | None = None) -> dict[str, Any]:
    """Decide every workload in order as the admission loop does, on a cache built from the
    scenario: quota, cohorts and borrowing, then the topology, then preemption. A preemptor's
    victims are evicted at once (their pods gone) and it is admitted in their room; the
    victims are not requeued. A `running` workload is admitted before the others are tried
    and never preempts."""
    from tas.admission.decide import decide

    started = time.perf_counter()
    state = cluster_state(scenario)
    if timings is not None:
        timings.snapshot = time.perf_counter() - started

    default_queue = scenario.cluster_queues[0]["metadata"]["name"]
    results: dict[str, dict[str, Any]] = {}
    order = sorted(range(len(scenario.workloads)), key=lambda i: not scenario.workloads[i].running)
    for step, index in enumerate(order):
        workload = scenario.workloads[index]
        queue = workload.cluster_queue or default_queue
        info = workload_info(workload, queue, index)
        started, started_cpu = time.perf_counter(), time.process_time()
        state.upsert_workload(info)
        decision = decide(state, info, state.cluster_queues[queue], now=at(len(order) + 1))
        preempted: list[str] = []
        if decision.preemption is not None and not workload.running:
            for target in decision.preemption.targets:
                victim = target.workload
                state.delete_workload(*victim.key)
                results[victim.name] |= {
                    "evicted": True,
                    "preemptedBy": workload.name,
                    "preemptionReason": target.reason,
                }
                preempted.append(victim.name)
            decision = decide(state, info, state.cluster_queues[queue], now=at(len(order) + 1))
        if decision.admitted:
            state.upsert_workload(admitted_info(info, decision, step))
        if timings is not None:
            wall, cpu = time.perf_counter() - started, time.process_time() - started_cpu
            timings.placements.append((decision.admitted, wall, cpu))
        if workload.running and not decision.admitted:
            raise ScenarioError(f"workloads[{index}].running", f"does not fit: {decision.message}")
        results[workload.name] = _decision_result(workload, queue, decision, preempted)
    tree = state.quota_tree()
    queues = []
    for obj in scenario.cluster_queues:
        name = obj["metadata"]["name"]
        used = state.quota_usage(name, SCENARIO_FLAVOR)
        covered = [r for g in state.cluster_queues[name].resource_groups for r in g.covered]
        queues.append(
            {
                "name": name,
                "usage": {r: format_milli(r, used.get(r, 0)) for r in sorted(covered)},
                "borrowed": {
                    r: format_milli(r, tree.borrowed(name, (SCENARIO_FLAVOR, r)))
                    for r in sorted(covered)
                },
            }
        )
    return {
        "workloads": [results[w.name] for w in scenario.workloads],
        "clusterQueues": queues,
    }


def cluster_state(scenario: Scenario):
    """The operator's cache as the scenario's cluster: its topology, flavor, queues, cohorts
    and nodes, no workload yet."""
    from tas.cache import projections
    from tas.cache.state import ClusterState

    state = ClusterState(scenario.options)
    state.upsert_topology(SCENARIO_TOPOLOGY, scenario.levels)
    state.upsert_flavor(
        projections.FlavorInfo(
            SCENARIO_FLAVOR,
            scenario.flavor.node_labels,
            scenario.flavor.tolerations,
            SCENARIO_TOPOLOGY,
        )
    )
    for obj in scenario.cohorts:
        state.upsert_cohort(projections.cohort_from_object(obj))
    for obj in scenario.cluster_queues:
        state.upsert_cluster_queue(projections.cluster_queue_from_object(obj))
        name = obj["metadata"]["name"]
        state.upsert_local_queue(SCENARIO_NAMESPACE, name, name)
    state.upsert_namespace(SCENARIO_NAMESPACE, {})
    for node in scenario.nodes:
        state.upsert_node(node)
    return state


def at(seconds: float) -> datetime:
    """A scenario's step, or a trace's simulated second, as a time for the admission code."""
    return _EPOCH + timedelta(seconds=seconds)


def workload_info(workload: Workload, queue: str, index: float):
    """The workload as a pending Workload; `index` (a step or a second) is its creation."""
    from tas.cache.projections import WorkloadInfo

    return WorkloadInfo(
        namespace=SCENARIO_NAMESPACE,
        name=workload.name,
        uid=workload.name,
        resource_version="1",
        generation=1,
        queue_name=queue,
        priority=workload.priority,
        created=at(index),  # the scenario's order is the queue's age order
        pod_sets=workload.podsets,
        admission_cq=None,
        admissions=(),
        conditions=(),
        unhealthy_nodes=(),
    )


def admitted_info(info, decision, step: float):
    """The workload as its status would read once admitted at `step` (its charge comes from
    it, and its admission time orders it among preemption candidates)."""
    from tas.cache.projections import PodSetAdmission

    when = at(step).isoformat() + "Z"
    conditions = tuple(
        {"type": t, "status": "True", "reason": t, "lastTransitionTime": when}
        for t in ("QuotaReserved", "Admitted")
    )
    return replace(
        info,
        resource_version="2",
        admission_cq=decision.charge.cluster_queue,
        admissions=tuple(
            PodSetAdmission(ps.name, ps.flavor, ps.count, ps.assignment)
            for ps in decision.charge.pod_sets
        ),
        conditions=conditions,
    )


def _decision_result(workload: Workload, queue: str, decision, preempted: list[str]) -> dict:
    if not decision.admitted:
        return {
            "name": workload.name,
            "admitted": False,
            "clusterQueue": queue,
            "message": decision.message,
        }
    out: dict[str, Any] = {
        "name": workload.name,
        "admitted": True,
        "clusterQueue": queue,
        "podSets": [
            {"name": ps.name, "count": ps.count}
            | (
                {
                    "topologyAssignment": topologyassignment.to_api(
                        ps.assignment, sort_by_values=True
                    )
                }
                if ps.assignment is not None
                else {}
            )
            for ps in decision.charge.pod_sets
        ],
    }
    if preempted:
        out["preempted"] = preempted
    return out
