"""Replacement assignments for failed nodes, and when a failure evicts instead. Writes
nothing: a replacement is only held in the cache's snapshots while it is computed.

Only the pods of the failed node move: within the required domain (or the broken slice's
domain) of the surviving pods, the rest of the assignment unchanged. The workload's own pods on
surviving nodes keep their usage in the snapshot, since they keep running there. As in Kueue,
the first listed node (the head) is replaced; its pods in every pod set move, each pod set
placed beside the ones moved before it.

The gates, as Kueue has them:
- SkipReassignmentForPodOwnedWorkloads: a Workload owned by a single Pod keeps its assignment
  (the pod cannot move, and the Workload goes with it); the node is only taken off the list.
- TASReplaceMultipleFailedNodes (alias TASMultipleNodeReplacement): the workload tolerates up
  to N unhealthy nodes at once (the Workload's tas-unhealthy-nodes-eviction-threshold
  annotation, 1 to 8, default 1) and they are replaced one per pass, the head first: the rest
  stay listed, and other nodes of the assignment that are gone do not stop the head's
  replacement. Within N, failing to find a replacement never evicts (fail-fast waits); beyond
  N a further failed node evicts. Without the gate a second failed node evicts at once, and
  the list is cleared once the head is replaced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tas.api.constants import UNHEALTHY_NODES_EVICTION_THRESHOLD_ANNOTATION
from tas.cache.projections import WorkloadInfo
from tas.cache.state import Charge, ClusterState, PodSetCharge
from tas.solver import TopologySnapshot
from tas.solver.types import (
    HOSTNAME_LEVEL,
    PodSetRequest,
    ReplacementPlacement,
    TopologyAssignment,
)

DEFAULT_EVICTION_THRESHOLD = 1  # as without the gate: a second failed node evicts
MAX_EVICTION_THRESHOLD = 8  # Kueue's limit on status.unhealthyNodes
_INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class ReplacementRules:
    """The gates that shape hot swap, read once by the operator."""

    fail_fast: bool = True  # TASFailedNodeReplacementFailFast
    keep_pod_owned: bool = True  # SkipReassignmentForPodOwnedWorkloads
    multiple_nodes: bool = False  # TASReplaceMultipleFailedNodes


@dataclass(frozen=True)
class Replacement:
    charge: Charge | None = None
    assignments: dict[str, TopologyAssignment] | None = None  # pod set -> new assignment
    failure: str | None = None
    node: str = ""  # the unhealthy node this pass settles (the head of the list)
    remaining: tuple[str, ...] = ()  # unhealthy nodes left listed for later passes
    kept: bool = False  # a single Pod's workload keeps its assignment

    def event(self) -> tuple[str, str]:
        """The Workload event's reason and message."""
        if self.kept:
            return (
                "NodeReplacementSkipped",
                f"Kept the topology assignment on unhealthy node {self.node}: the workload is "
                "owned by a single Pod, which cannot move",
            )
        return "NodeReplaced", f"Replaced unhealthy node {self.node} in the topology assignment"


def assigned_hosts(assignment: TopologyAssignment | None) -> set[str]:
    if assignment is None or assignment.levels[-1:] != (HOSTNAME_LEVEL,):
        return set()
    return {d.values[-1] for d in assignment.domains}


def needs_replacement(workload: WorkloadInfo) -> list[str]:
    """Unhealthy nodes that still carry part of the workload's assignment, head first."""
    return list(workload.nodes_to_replace)


def eviction_threshold(workload: WorkloadInfo) -> tuple[int, str | None]:
    """How many unhealthy nodes the workload tolerates at once, and what is wrong with its
    annotation (the default then applies, as in Kueue)."""
    raw = workload.eviction_threshold
    if raw is None:
        return DEFAULT_EVICTION_THRESHOLD, None
    value = int(raw) if _INTEGER.fullmatch(raw) else 0  # Go's Atoi: no spaces, no underscores
    if DEFAULT_EVICTION_THRESHOLD <= value <= MAX_EVICTION_THRESHOLD:
        return value, None
    return DEFAULT_EVICTION_THRESHOLD, (
        f"annotation {UNHEALTHY_NODES_EVICTION_THRESHOLD_ANNOTATION}: {raw!r} is not an "
        f"integer from {DEFAULT_EVICTION_THRESHOLD} to {MAX_EVICTION_THRESHOLD}; "
        f"using {DEFAULT_EVICTION_THRESHOLD}"
    )


def evicts_on_another_failure(workload: WorkloadInfo, multiple_nodes: bool) -> bool:
    """A node not listed yet failed under the workload: evict, or list it."""
    if not workload.unhealthy_nodes:
        return False
    if not multiple_nodes:
        return True
    return len(workload.unhealthy_nodes) >= eviction_threshold(workload)[0]


def evicts_without_replacement(workload: WorkloadInfo, rules: ReplacementRules) -> bool:
    """No replacement was found: evict now (fail-fast), or try again on the next change."""
    if not rules.fail_fast:
        return False
    if not rules.multiple_nodes:
        return True
    return len(workload.unhealthy_nodes) > eviction_threshold(workload)[0]


def find_replacement(
    state: ClusterState,
    workload: WorkloadInfo,
    charge: Charge,
    rules: ReplacementRules = ReplacementRules(),
) -> Replacement:
    listed = needs_replacement(workload)
    if not listed:  # nothing of the assignment is on a listed node: only the list goes
        return Replacement(charge=charge, assignments={})
    head, *tail = listed
    settled = Replacement(
        node=head, remaining=tuple(tail) if rules.multiple_nodes else (), charge=charge
    )
    if rules.keep_pod_owned and workload.owned_by_single_pod:
        return replace(settled, assignments={}, kept=True)
    requests = {ps.name: ps for ps in workload.pod_sets}
    affected = [
        (i, ps)
        for i, ps in enumerate(charge.pod_sets)
        if ps.name in requests
        and ps.flavor in state.flavors
        and head in assigned_hosts(ps.assignment)
    ]
    # Built before any pod set's new pods are held in them (a snapshot built later would
    # not have them to give back).
    snapshots = {ps.flavor: state.snapshot(ps.flavor) for _, ps in affected}
    new_pod_sets = list(charge.pod_sets)
    assignments: dict[str, TopologyAssignment] = {}
    held: list[PodSetCharge] = []
    try:
        for i, ps in affected:
            assert ps.assignment is not None
            result = _replace_node(
                snapshots[ps.flavor], requests[ps.name], ps.assignment, head, rules
            )
            if result.assignment is None or result.added is None:
                failure = (
                    result.failure
                    or f"cannot find replacement assignment for unhealthy node: {head}"
                )
                return Replacement(failure=failure, node=head)
            new_pod_sets[i] = replace(ps, assignment=result.assignment)
            assignments[ps.name] = result.assignment
            held.append(replace(ps, assignment=result.added))
            state.hold_in_snapshots(held[-1], 1)  # the next pod set is placed beside them
    finally:
        for ps in held:
            state.hold_in_snapshots(ps, -1)
    return replace(
        settled, charge=replace(charge, pod_sets=tuple(new_pod_sets)), assignments=assignments
    )


def _replace_node(
    snapshot: TopologySnapshot,
    request: PodSetRequest,
    assignment: TopologyAssignment,
    node: str,
    rules: ReplacementRules,
) -> ReplacementPlacement:
    """One pod set's replacement of `node`. With several failed nodes allowed, the other
    nodes of the assignment that are gone (failed too, listed or not yet) are left as they
    are, for a later pass, instead of making the assignment stale."""
    gone = [
        d
        for d in assignment.domains
        if rules.multiple_nodes and d.values[-1] != node and snapshot.leaf_path(d.values) is None
    ]
    if not gone:
        return snapshot.find_replacement(request, assignment, node)
    present = tuple(d for d in assignment.domains if d not in gone)
    result = snapshot.find_replacement(
        request, TopologyAssignment(assignment.levels, present), node
    )
    if result.assignment is None:
        return result
    domains = sorted(
        [*result.assignment.domains, *gone],
        key=lambda d: snapshot.leaf_path(d.values) or tuple(d.values),
    )
    return replace(result, assignment=TopologyAssignment(assignment.levels, tuple(domains)))
