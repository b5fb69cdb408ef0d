"""The largest gang that would fit now: how many pods of one shape the solver would admit as
one pod set asking for one domain of a level ("would a 64-GPU required-block job fit?").

Feasibility only grows as the count shrinks (fewer pods of the same shape fit wherever more
did), so a binary search over the count, each step the solver's own find_assignments on the
flavor's snapshot, finds the answer in log2(capacity) placements. The snapshot is not changed.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.cache.state import ClusterState
from tas.solver import TopologySnapshot
from tas.solver.types import PodSetRequest, Resources, TopologyRequest, with_one_pod
from tas.view.live import topology_flavors
from tas.view.model import DomainView, FlavorView

MODES = ("required", "preferred")
GANG = "gang"  # the pod set's name in the placements tried


def largest_gang(
    snapshot: TopologySnapshot, per_pod: Resources, level: str, *, mode: str = "required"
) -> int:
    """The most pods asking `per_pod` each (without the implicit one "pods") that the solver
    admits now as one pod set with a `mode` request for `level`; 0 when not even one fits."""
    request = _request(level, mode, snapshot.levels)
    if any(value < 0 for value in per_pod.values()):
        raise ValueError(f"per_pod: requests must not be negative, got {dict(per_pod)}")

    def fits(count: int) -> bool:
        podset = PodSetRequest(name=GANG, count=count, requests=per_pod, topology=request)
        return snapshot.find_assignments([podset]).admitted

    low, high = 0, _pods_at_most(snapshot, per_pod)  # fits(low); nothing beyond high fits
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def largest_gangs(
    state: ClusterState, per_pod: Resources, level: str, mode: str = "required"
) -> dict[str, int]:
    """Per topology-aware flavor whose Topology has `level`, its largest gang."""
    return {
        name: largest_gang(state.snapshot(name), per_pod, level, mode=mode)
        for name in topology_flavors(state)
        if level in state.topologies[state.flavors[name].topology_name or ""]
    }


def most_free_per_level(flavor: FlavorView) -> dict[str, dict[str, int]]:
    """Per level above the hosts: the most any one of its domains has free, per resource."""
    out: dict[str, dict[str, int]] = {}

    def walk(domain: DomainView) -> None:
        most = out.setdefault(domain.level, {})
        for name, value in domain.free.items():
            most[name] = max(most.get(name, 0), value)
        for child in domain.domains:
            walk(child)

    for domain in flavor.domains:
        walk(domain)
    return out


def _request(level: str, mode: str, levels: tuple[str, ...]) -> TopologyRequest:
    if mode not in MODES:
        raise ValueError(f"mode: must be one of {', '.join(MODES)}, got {mode!r}")
    if level not in levels:
        raise ValueError(f"level: {level!r} is not a level of the topology ({', '.join(levels)})")
    return (
        TopologyRequest(required=level) if mode == "required" else TopologyRequest(preferred=level)
    )


def _pods_at_most(snapshot: TopologySnapshot, per_pod: Mapping[str, int]) -> int:
    """An upper bound: the pods of this shape every leaf could take, each on its own."""
    shape = {name: value for name, value in with_one_pod(per_pod).items() if value > 0}
    total = 0
    for remaining in snapshot.remaining().values():
        total += max(0, min(remaining.get(name, 0) // value for name, value in shape.items()))
    return total
