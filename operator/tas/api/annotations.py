"""Kueue's topology annotations on a PodTemplate -> a typed `TopologyRequest`, with Kueue's rules.

Three steps, because each needs more context than the one before:

- `parse_topology_request(annotations, count)`: one pod set on its own (Kueue's webhook rules).
- `validate_levels(request, levels)`: the request against the Topology it lands on (Kueue checks
  these at scheduling time; we check them as early as the Topology is known).
- `validate_pod_set_groups(podsets)`: `podset-group-name` across the pod sets of one workload.

Every refusal is a `TopologyRequestError` that names the annotation and its value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from tas import features
from tas.api.constants import (
    INT32_MAX,
    LABEL_KEY_MAX,
    POD_SET_GROUP_NAME_MAX,
    PODSET_GROUP_NAME,
    PODSET_PREFERRED_TOPOLOGY,
    PODSET_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY,
    PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS,
    PODSET_SLICE_SIZE,
    PODSET_UNCONSTRAINED_TOPOLOGY,
    TAS_PODSET_PREFERRED_TOPOLOGY,
)
from tas.api.names import DNS1123_SUBDOMAIN_MAX, is_dns1123_subdomain
from tas.features import Gate
from tas.solver.placement import placed_as_gang
from tas.solver.types import PodSetRequest, SliceLayer, TopologyRequest

MAX_SLICE_LAYERS = 3


MAX_CONSTRAINTS_TEXT = 4096  # three layers fit in a few hundred characters
_UINT64_MAX = 2**64 - 1

# Go's strconv.ParseBool, which is what Kueue uses for the unconstrained annotation.
_GO_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}
# A Kubernetes label key: an optional DNS-subdomain prefix and "/", then a name of <= 63 chars.
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


class TopologyRequestError(ValueError):
    """A topology annotation that Kueue would refuse.

    `annotation` and `value` say which one (value None when the annotation is missing);
    `podset_index` is set by `validate_pod_set_groups` to the offending pod set.
    """

    def __init__(
        self,
        annotation: str,
        value: str | None,
        problem: str,
        podset_index: int | None = None,
        where: str | None = None,
    ) -> None:
        self.annotation = annotation
        self.value = value
        self.problem = problem
        self.podset_index = podset_index
        self.where = where  # which template, for an owner with several (a JobSet's replicatedJob)
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}annotation {quote(annotation)}: {self.detail}")

    def at(self, where: str) -> TopologyRequestError:
        """The same error, saying which template it is in."""
        return TopologyRequestError(
            self.annotation, self.value, self.problem, self.podset_index, where
        )

    @property
    def detail(self) -> str:
        """The message without the annotation name: `"0" must be at least 1`."""
        return self.problem if self.value is None else f"{quote(self.value)} {self.problem}"


MAX_QUOTED = 200  # characters of a value repeated in a message: input is not echoed unbounded


def quote(text: str) -> str:
    if len(text) > MAX_QUOTED:
        return json.dumps(text[:MAX_QUOTED]) + f"... ({len(text)} characters)"
    return json.dumps(text)


def label_key_problem(key: str) -> str | None:
    """Why `key` is not a valid label key for a topology level, or None when it is: a Kubernetes
    label key, within the limit of the CRD fields that hold one (Kueue's)."""
    if len(key) > LABEL_KEY_MAX:
        return f"must be at most {LABEL_KEY_MAX} characters"
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return "must not start with '/'"
    if slash:
        if len(prefix) > DNS1123_SUBDOMAIN_MAX:
            return "must have a prefix of at most 253 characters"
        if not is_dns1123_subdomain(prefix):
            return "must have a prefix that is a DNS subdomain (lowercase, e.g. example.com)"
    if not name:
        return "must not be empty"
    if len(name) > 63:
        return "must have a name part of at most 63 characters"
    if not _LABEL_NAME.fullmatch(name):
        return (
            "must be a label key: alphanumerics, '-', '_' or '.', starting and ending"
            " with an alphanumeric, with an optional DNS-subdomain prefix and '/'"
        )
    return None


def _check_label_key(annotation: str, value: str) -> None:
    problem = label_key_problem(value)
    if problem is not None:
        raise TopologyRequestError(annotation, value, problem)


def _parse_go_int32(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 32): optional sign, decimal digits only, int32 range."""
    # Bounded before int(): Python refuses more than 4,300 digits (and they are out of range).
    if len(text) > 12 or not re.fullmatch(r"[+-]?[0-9]+", text, re.ASCII):
        return None
    value = int(text)
    return value if -INT32_MAX - 1 <= value <= INT32_MAX else None


def _is_numeric_group_name(text: str) -> bool:
    """Kueue refuses a group name that strconv.ParseUint(text, 10, 64) accepts."""
    digits = text.lstrip("0")
    return (
        re.fullmatch(r"[0-9]+", text, re.ASCII) is not None
        and len(digits) <= 20
        and int(digits or "0") <= _UINT64_MAX
    )


def _unconstrained(text: str | None) -> bool:
    if text is None:
        return False
    if text not in _GO_BOOLS:
        raise TopologyRequestError(
            PODSET_UNCONSTRAINED_TOPOLOGY, text, "must be a boolean (true or false)"
        )
    return _GO_BOOLS[text]


def _inner_preferred(annotations: Mapping[str, str], required: str | None) -> str | None:
    """Our lower preferred level (TASRequiredWithPreferred), only beside a required one."""
    inner_preferred = inner_preferred_of(annotations)
    if inner_preferred is not None:
        _check_label_key(TAS_PODSET_PREFERRED_TOPOLOGY, inner_preferred)
        if required is None:
            raise TopologyRequestError(
                TAS_PODSET_PREFERRED_TOPOLOGY,
                inner_preferred,
                f"needs {quote(PODSET_REQUIRED_TOPOLOGY)} (a lower level preferred inside it)",
            )
    return inner_preferred


def parse_topology_request(
    annotations: Mapping[str, str],
    count: int,
    *,
    pod_index_label: str | None = None,
    sub_group: tuple[str, int] | None = None,
) -> TopologyRequest:
    """Parse one pod set's annotations, refusing what Kueue's webhook refuses.

    `count` is the pod set's count (slice sizes may not exceed it). The process's
    TASMultiLayerTopology, TASPartialSlices and TASGroupedPodSetSlicing gates decide which slice
    annotations are allowed. A pod set without annotations gives the implied request.
    `pod_index_label` and `sub_group` (the label of a pod's Job index, and the number of Jobs)
    are the integration's rank order, recorded for the ungater.
    """
    required = annotations.get(PODSET_REQUIRED_TOPOLOGY)
    preferred = annotations.get(PODSET_PREFERRED_TOPOLOGY)
    unconstrained_text = annotations.get(PODSET_UNCONSTRAINED_TOPOLOGY)
    group_name = annotations.get(PODSET_GROUP_NAME)

    _check_one_mode(annotations)
    if required is not None:
        _check_label_key(PODSET_REQUIRED_TOPOLOGY, required)
    if preferred is not None:
        _check_label_key(PODSET_PREFERRED_TOPOLOGY, preferred)
    unconstrained = _unconstrained(unconstrained_text)

    # With TASGroupedPodSetSlicing a group may have slices, checked as anyone's; so may the
    # roles of a multi-role group (validate_pod_set_groups refuses them in a leader pair).
    grouped_slicing = features.enabled(Gate.TAS_GROUPED_POD_SET_SLICING) or features.enabled(
        Gate.TAS_MULTI_ROLE_POD_SET_GROUPS
    )
    grouped_without_slices = None if grouped_slicing else group_name
    if group_name is not None:
        _check_group_name(group_name, required, preferred, {} if grouped_slicing else annotations)
    layers = _parse_slice_layers(annotations, count, grouped_without_slices)
    inner_preferred = _inner_preferred(annotations, required)
    return TopologyRequest(
        required=required,
        preferred=preferred,
        inner_preferred=inner_preferred,
        unconstrained=unconstrained,
        slice_layers=layers,
        group_name=group_name,
        pod_index_label=pod_index_label,
        sub_group_index_label=sub_group[0] if sub_group else None,
        sub_group_count=sub_group[1] if sub_group else None,
    )


def inner_preferred_of(annotations: Mapping[str, str]) -> str | None:
    """Our lower preferred level beside a required one; None unless TASRequiredWithPreferred
    is on (off, the annotation is ignored, as any other unknown one)."""
    if not features.enabled(Gate.TAS_REQUIRED_WITH_PREFERRED):
        return None
    return annotations.get(TAS_PODSET_PREFERRED_TOPOLOGY)


def _check_one_mode(annotations: Mapping[str, str]) -> None:
    """At most one of required / preferred / unconstrained; blame the lower-precedence one."""
    present = [
        name
        for name in (
            PODSET_REQUIRED_TOPOLOGY,
            PODSET_PREFERRED_TOPOLOGY,
            PODSET_UNCONSTRAINED_TOPOLOGY,
        )
        if name in annotations
    ]
    if len(present) > 1:
        raise TopologyRequestError(
            present[1],
            annotations[present[1]],
            f"may not be set together with {quote(present[0])}",
        )


def _check_group_name(
    group_name: str,
    required: str | None,
    preferred: str | None,
    slicing: Mapping[str, str],
) -> None:
    """The group rules; `slicing` holds the slice annotations a group may not have (none with
    TASGroupedPodSetSlicing)."""
    if not group_name.strip():
        raise TopologyRequestError(PODSET_GROUP_NAME, group_name, "must not be empty")
    if len(group_name) > POD_SET_GROUP_NAME_MAX:
        raise TopologyRequestError(
            PODSET_GROUP_NAME, group_name, f"must be at most {POD_SET_GROUP_NAME_MAX} characters"
        )
    if _is_numeric_group_name(group_name):
        raise TopologyRequestError(PODSET_GROUP_NAME, group_name, "must not be a number")
    for other in (PODSET_SLICE_SIZE, PODSET_SLICE_REQUIRED_TOPOLOGY):
        if other in slicing:
            raise TopologyRequestError(
                PODSET_GROUP_NAME, group_name, f"may not be set together with {quote(other)}"
            )
    if required is None and preferred is None:
        raise TopologyRequestError(
            PODSET_GROUP_NAME,
            group_name,
            f"needs {quote(PODSET_REQUIRED_TOPOLOGY)} or {quote(PODSET_PREFERRED_TOPOLOGY)}",
        )


def _parse_slice_layers(
    annotations: Mapping[str, str],
    count: int,
    group_name: str | None,
) -> tuple[SliceLayer, ...]:
    """The slice layers of the single-layer or the constraints annotations; `group_name` is
    the group that may not have constraints (None: no such group, or TASGroupedPodSetSlicing)."""
    slice_topology = annotations.get(PODSET_SLICE_REQUIRED_TOPOLOGY)
    slice_size_text = annotations.get(PODSET_SLICE_SIZE)
    constraints_text = annotations.get(PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS)
    partial_slices = features.enabled(Gate.TAS_PARTIAL_SLICES)
    if constraints_text is None:
        return _parse_single_slice_layer(slice_topology, slice_size_text, count, partial_slices)
    return _parse_constraints(
        constraints_text,
        count,
        slice_topology,
        slice_size_text,
        group_name,
        partial_slices,
    )


def _parse_single_slice_layer(
    slice_topology: str | None, slice_size_text: str | None, count: int, partial_slices: bool
) -> tuple[SliceLayer, ...]:
    if slice_topology is not None:
        _check_label_key(PODSET_SLICE_REQUIRED_TOPOLOGY, slice_topology)
    size = None
    if slice_size_text is not None:
        size = _parse_go_int32(slice_size_text)
        if size is None:
            raise TopologyRequestError(PODSET_SLICE_SIZE, slice_size_text, "must be an integer")
        if size < 1:
            raise TopologyRequestError(PODSET_SLICE_SIZE, slice_size_text, "must be at least 1")
        if size > count:
            raise TopologyRequestError(
                PODSET_SLICE_SIZE,
                slice_size_text,
                f"must not be greater than the pod set count {count}",
            )
        if count % size != 0 and not partial_slices:
            # Without TASPartialSlices Kueue places only whole slices: the rest would stay
            # gated forever.
            raise TopologyRequestError(
                PODSET_SLICE_SIZE, slice_size_text, f"must divide the pod set count {count}"
            )
    if slice_topology is not None and size is None:
        raise TopologyRequestError(
            PODSET_SLICE_SIZE,
            None,
            f"must be set when {quote(PODSET_SLICE_REQUIRED_TOPOLOGY)} is set",
        )
    if slice_topology is None and size is not None:
        raise TopologyRequestError(
            PODSET_SLICE_SIZE,
            slice_size_text,
            f"may not be set without {quote(PODSET_SLICE_REQUIRED_TOPOLOGY)}",
        )
    if slice_topology is None or size is None:
        return ()
    return (SliceLayer(level=slice_topology, size=size),)


def _parse_constraints(
    text: str,
    count: int,
    slice_topology: str | None,
    slice_size_text: str | None,
    group_name: str | None,
    partial_slices: bool,
) -> tuple[SliceLayer, ...]:
    """`[{"topology": L, "size": N}, ...]`, outermost first; depth is checked in validate_levels.

    `group_name` is None when TASGroupedPodSetSlicing allows slices in a group. A partial last
    slice (TASPartialSlices) is for a single layer only: inner layers could not divide it."""
    name = PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS

    def fail(problem: str) -> TopologyRequestError:
        return TopologyRequestError(name, text, problem)

    if not features.enabled(Gate.TAS_MULTI_LAYER_TOPOLOGY):
        raise fail(f"needs the {Gate.TAS_MULTI_LAYER_TOPOLOGY} feature gate")
    for other, value in (
        (PODSET_SLICE_REQUIRED_TOPOLOGY, slice_topology),
        (PODSET_SLICE_SIZE, slice_size_text),
        (PODSET_GROUP_NAME, group_name),
    ):
        if value is not None:
            raise fail(f"may not be set together with {quote(other)}")
    if len(text) > MAX_CONSTRAINTS_TEXT:
        raise fail(f"must be at most {MAX_CONSTRAINTS_TEXT} characters")
    try:
        entries = json.loads(text)
    except (ValueError, RecursionError) as error:  # deep nesting: RecursionError
        reason = str(error)[:MAX_QUOTED] if isinstance(error, ValueError) else "nested too deeply"
        raise fail(f'must be a JSON array of {{"topology": ..., "size": ...}}: {reason}') from None
    if not isinstance(entries, list):
        raise fail('must be a JSON array of {"topology": ..., "size": ...}')
    if not 1 <= len(entries) <= MAX_SLICE_LAYERS:
        raise fail(f"must have 1 to {MAX_SLICE_LAYERS} layers, got {len(entries)}")

    layers: list[SliceLayer] = []
    for index, entry in enumerate(entries):
        layer = _slice_layer(entry, layers)
        if isinstance(layer, str):
            raise fail(f"layer {index}: {layer}")
        layers.append(layer)
    problem = _outer_size_problem(layers, count, partial_slices)
    if problem is not None:
        raise fail(problem)
    return tuple(layers)


def _slice_layer(entry: object, outer: list[SliceLayer]) -> SliceLayer | str:
    """One entry of the slice constraints, below the layers `outer`; or what is wrong with it."""
    if not isinstance(entry, dict):
        return "must be an object with topology and size"
    level = _json_field(entry, "topology")
    size = _json_field(entry, "size")
    if level is None:
        return "topology must be set"
    if not isinstance(level, str):
        return "topology must be a string"
    problem = label_key_problem(level)
    if problem is not None:
        return f"topology {quote(level)} {problem}"
    if size is None:
        return "size must be set"
    if isinstance(size, bool) or not isinstance(size, int) or abs(size) > INT32_MAX:
        return "size must be an integer"
    if size < 1:
        return f"size {size} must be at least 1"
    if any(layer.level == level for layer in outer):
        return f"topology {quote(level)} appears twice"
    if outer and outer[-1].size % size != 0:
        return f"size {size} must divide the outer layer's size {outer[-1].size}"
    return SliceLayer(level=level, size=size)


def _outer_size_problem(layers: list[SliceLayer], count: int, partial_slices: bool) -> str | None:
    """The outermost size is at most the count and divides it, but with TASPartialSlices a
    single layer may leave a partial last slice."""
    size = layers[0].size
    if size > count:
        return f"layer 0: size {size} must not be greater than the pod set count {count}"
    if count % size != 0 and not (partial_slices and len(layers) == 1):
        when = " when more than one layer is specified" if partial_slices else ""
        return f"layer 0: size {size} must divide the pod set count {count}{when}"
    return None


def _json_field(entry: dict[str, object], key: str) -> object:
    """Go's encoding/json matches keys case-insensitively when no exact match exists."""
    if key in entry:
        return entry[key]
    for candidate, value in entry.items():
        if candidate.lower() == key:
            return value
    return None


def _slice_source(
    request: TopologyRequest, annotations: Mapping[str, str] | None
) -> tuple[bool, str, str]:
    """Whether the slices came from the constraints annotation, and the annotation and value an
    error about them names."""
    from_constraints = len(request.slice_layers) > 1 or (
        annotations is not None and PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS in annotations
    )
    if from_constraints:
        name = PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS
        value = (annotations or {}).get(name) or json.dumps(
            [{"topology": layer.level, "size": layer.size} for layer in request.slice_layers]
        )
        return True, name, value
    return False, PODSET_SLICE_REQUIRED_TOPOLOGY, request.slice_layers[0].level


def validate_levels(
    request: TopologyRequest, levels: Sequence[str], annotations: Mapping[str, str] | None = None
) -> None:
    """Check a request against a Topology's levels (highest first).

    Every named level must exist; the (outermost) slice level must be at or below the
    required/preferred level; each further slice layer must be strictly deeper than the one
    before. `annotations` only sharpen the error: they tell whether slices came from the
    single-layer annotations or from the constraints annotation.
    """
    levels = list(levels)
    depth = {level: index for index, level in enumerate(levels)}
    known = ", ".join(levels)

    mode = (
        (PODSET_REQUIRED_TOPOLOGY, request.required)
        if request.required is not None
        else (PODSET_PREFERRED_TOPOLOGY, request.preferred)
    )
    mode_annotation, mode_level = mode
    if mode_level is not None and mode_level not in depth:
        raise TopologyRequestError(
            mode_annotation, mode_level, f"is not a level of the topology (levels: {known})"
        )
    if request.inner_preferred is not None:
        _check_inner_preferred(request, request.inner_preferred, depth, known)
    if not request.slice_layers:
        return

    from_constraints, name, value = _slice_source(request, annotations)

    def fail(index: int, problem: str) -> TopologyRequestError:
        where = f"layer {index}: " if from_constraints else ""
        return TopologyRequestError(name, value, where + problem)

    for index, layer in enumerate(request.slice_layers):
        if layer.level not in depth:
            raise fail(
                index, f"{quote(layer.level)} is not a level of the topology (levels: {known})"
            )
        if index > 0:
            outer = request.slice_layers[index - 1]
            if depth[layer.level] <= depth[outer.level]:
                raise fail(
                    index, f"{quote(layer.level)} must be a lower level than {quote(outer.level)}"
                )
    outermost = request.slice_layers[0].level
    if mode_level is not None and depth[outermost] < depth[mode_level]:
        raise fail(
            0,
            f"{quote(outermost)} must be at or below the pod set's level {quote(mode_level)}",
        )


def _check_inner_preferred(
    request: TopologyRequest, level: str, depth: Mapping[str, int], known: str
) -> None:
    """Our preferred `level`: a level of the topology, below the required one, at or above
    the outermost slice level (inside the required domain it is placed as Kueue's preferred)."""
    if level not in depth:
        raise TopologyRequestError(
            TAS_PODSET_PREFERRED_TOPOLOGY,
            level,
            f"is not a level of the topology (levels: {known})",
        )
    if request.required is None or depth[level] <= depth.get(request.required, len(depth)):
        raise TopologyRequestError(
            TAS_PODSET_PREFERRED_TOPOLOGY,
            level,
            f"must be a lower level than {PODSET_REQUIRED_TOPOLOGY} {quote(request.required or '')}",
        )
    if request.slice_layers and depth.get(request.slice_layers[0].level, 0) < depth[level]:
        raise TopologyRequestError(
            TAS_PODSET_PREFERRED_TOPOLOGY,
            level,
            f"must be at or above the slice level {quote(request.slice_layers[0].level)}",
        )


def _check_roles(name: str, members: list[int], podsets: Sequence[PodSetRequest]) -> None:
    """A multi-role group (TASMultiRolePodSetGroups): every pod set at the same level."""
    first = podsets[members[0]]
    for index in members[1:]:
        other = podsets[index]
        if (other.topology.required, other.topology.preferred) != (
            first.topology.required,
            first.topology.preferred,
        ):
            raise TopologyRequestError(
                PODSET_GROUP_NAME,
                name,
                f"needs the same {quote(PODSET_REQUIRED_TOPOLOGY)} or"
                f" {quote(PODSET_PREFERRED_TOPOLOGY)} in every pod set"
                f" ({first.name!r}, {other.name!r})",
                podset_index=index,
            )


def validate_pod_set_groups(podsets: Sequence[PodSetRequest]) -> None:
    """`podset-group-name` across one workload's pod sets: each group is exactly two pod sets,
    one of them with count 1, both required (or both preferred) at the same level, and without
    slices unless the TASGroupedPodSetSlicing gate is on. With TASMultiRolePodSetGroups, a
    group that is not such a pair may have any number of pod sets (and slices), all at one
    level."""
    groups: dict[str, list[int]] = {}
    for index, podset in enumerate(podsets):
        if podset.topology.group_name is not None:
            groups.setdefault(podset.topology.group_name, []).append(index)

    multi_role = features.enabled(Gate.TAS_MULTI_ROLE_POD_SET_GROUPS)
    for name, members in groups.items():
        if multi_role and placed_as_gang([podsets[index] for index in members]):
            _check_roles(name, members, podsets)
            continue
        if len(members) != 2:
            raise TopologyRequestError(
                PODSET_GROUP_NAME,
                name,
                f"must join exactly 2 pod sets, got {len(members)}",
                podset_index=members[-1],
            )
        first, second = (podsets[index] for index in members)
        if first.count != 1 and second.count != 1:
            raise TopologyRequestError(
                PODSET_GROUP_NAME,
                name,
                "needs one pod set with count 1 (the leader),"
                f" got counts {first.count} and {second.count}",
                podset_index=members[1],
            )
        same_mode = (first.topology.required, first.topology.preferred) == (
            second.topology.required,
            second.topology.preferred,
        )
        if not same_mode:
            raise TopologyRequestError(
                PODSET_GROUP_NAME,
                name,
                f"needs the same {quote(PODSET_REQUIRED_TOPOLOGY)} or"
                f" {quote(PODSET_PREFERRED_TOPOLOGY)} in both pod sets"
                f" ({first.name!r}, {second.name!r})",
                podset_index=members[1],
            )
        sliced = first.topology.slice_layers or second.topology.slice_layers
        if sliced and not features.enabled(Gate.TAS_GROUPED_POD_SET_SLICING):
            raise TopologyRequestError(
                PODSET_GROUP_NAME, name, "may not be used with slices", podset_index=members[1]
            )
