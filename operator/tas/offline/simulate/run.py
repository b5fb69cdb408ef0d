"""The event loop of `tas simulate` and its report.

Simulated time jumps from event to event. At each event time, the workloads whose time is up
leave first (their capacity and quota come back), the arrivals join the pending queue, then
the admission loop tries the pending workloads in queue order: higher priority first, then
earlier arrival, then trace order. One that does not fit stays pending and the ones behind it
may go ahead (Kueue's BestEffortFIFO). An admitted workload holds its placement for its
`duration` from its admission.

Placement is the operator's: without clusterQueues the solver on one snapshot, as `tas solve`
places; with clusterQueues the admission loop's own decision (quota, cohorts, preemption) on
the operator's cache. A preempted workload leaves at once and is queued again, in its old
place: Kueue orders it by its creation still.

With the gate TASPlacementGroups, a member of a placement group is placed by its group's
constraints, as the operator places it (solver/groups.py), the group holding the pods of its
members running; every other workload keeps out of the domains exclusive groups hold. Without
the gate, the trace's groups are ignored.
"""

from __future__ import annotations

import heapq
import json
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import IO, Any

import numpy as np

from tas import features
from tas.admission.decide import GroupDecision, decide, topology_flavors_within_quota
from tas.admission.fairshare_order import FairSharingOrder
from tas.api.format import format_milli
from tas.api.placementgroups import rules_for, spec_to_object
from tas.api.relaxation import relax
from tas.cache import fairshare, placementgroups, projections
from tas.features import Gate
from tas.offline import scenario, summary
from tas.offline.fields import ScenarioError
from tas.offline.reader import SCENARIO_FLAVOR, Scenario, Workload
from tas.offline.simulate import trace as tracefile
from tas.offline.simulate.moves import Mover, Running
from tas.offline.simulate.trace import Trace, TracedWorkload
from tas.solver import (
    HOSTNAME_LEVEL,
    PODS,
    PodSetRequest,
    TopologyAssignment,
    TopologySnapshot,
    WorkloadPlacement,
    groups,
)
from tas.solver.types import ONE_POD, with_one_pod

DECIMALS = 6  # of the fractions in the report
WIDE = 400  # characters: a report's value up to this long takes one line
Path = tuple[str, ...]  # a leaf's values at every level


@dataclass(frozen=True)
class PodSetUse:
    """The pods of one admitted pod set: where they are, and what each requests (without the
    implicit 1 of "pods")."""

    assignment: TopologyAssignment
    requests: Mapping[str, int]
    # a member of a partitioned placement group: each of its leaves' partition (1..K)
    partitions: Mapping[Path, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Attempt:
    admitted: bool
    message: str  # why not, when not admitted
    uses: tuple[PodSetUse, ...] = ()
    evicted: tuple[str, ...] = ()  # workloads preempted to make room for it


# An observer sees, after each event, the time and every running workload's pods; a waiting
# observer the time and every waiting workload with why its last try failed (`tas top --trace`).
Observer = Callable[[float, Mapping[str, tuple[PodSetUse, ...]]], None]
WaitingObserver = Callable[[float, Mapping[str, str]], None]


# ---------------------------------------------------------------------------------------------
# The two ways of admitting, as `tas solve` has them.


@dataclass
class _Group:
    """A placement group as the solver path keeps it: what its running members hold."""

    rules: groups.GroupRules
    state: groups.GroupState = field(default_factory=groups.GroupState)
    members: dict[str, dict[Path, int]] = field(default_factory=dict)  # running: pods per leaf


class _SolverAdmission:
    """Without clusterQueues: the solver alone, on one snapshot kept up to date."""

    def __init__(self, scen: Scenario) -> None:
        self.snapshot = TopologySnapshot(scen.levels, scen.nodes, scen.flavor, scen.options)
        self.snapshot.build()
        self.nodes = {node.name: node for node in scen.nodes}  # their NUMA zones change
        self.placements: dict[str, Any] = {}
        self.placement_groups = scen.options.placement_groups
        self.fragmentation_aware = scen.options.fragmentation_aware
        self.groups: dict[str, _Group] = {}

    def arrive(self, traced: TracedWorkload, now: float) -> None:
        pass  # the solver has no queue to tell

    def weighted_shares(self) -> dict[str, int] | None:
        return None  # no queues: no fair sharing

    def try_admit(self, traced: TracedWorkload, now: float) -> Attempt:
        partitions: Mapping[Path, int] = {}
        if not self.placement_groups:
            placement = scenario.place(self.snapshot, self.nodes, _relaxed(traced, now))
        elif traced.group is None:
            placement = self._place_outside_groups(traced)
        else:
            placement, partitions = self._place_member(traced)
        if not placement.admitted:
            return Attempt(False, placement.failure or "")
        self.placements[traced.name] = placement
        requests = {podset.name: podset.requests for podset in traced.workload.podsets}
        uses = tuple(
            PodSetUse(p.assignment, requests[p.name], partitions) for p in placement.podsets
        )
        return Attempt(True, "", uses)

    def planning_snapshot(self, traced: TracedWorkload) -> TopologySnapshot | None:
        """Where defragmentation plans for it: the snapshot, unless groups shape placement
        (the planner places as plain workloads are placed)."""
        return None if self.placement_groups else self.snapshot

    def _owned_by_others(self, me: str | None, rule: str = "exclusive") -> dict[int, set[Path]]:
        """Level index -> the domains groups other than `me` hold at the level of their `rule`
        (exclusive: no one else may enter; affinity: where they will grow)."""
        owned: dict[int, set[Path]] = {}
        for name, group in self.groups.items():
            depth = getattr(group.rules, rule)
            if name != me and depth is not None and not group.state.empty:
                owned.setdefault(depth, set()).update(group.state.domains_at(depth))
        return owned

    def _place_outside_groups(self, traced: TracedWorkload) -> WorkloadPlacement:
        """As scenario.place, out of the domains exclusive groups hold."""
        owned = self._owned_by_others(None)
        layout = self.snapshot.group_layout()
        excluded = groups.excluded_leaves(layout, owned) if owned else None
        growing = self._owned_by_others(None, "affinity") if self.fragmentation_aware else None
        reserved = groups.excluded_leaves(layout, growing) if growing else None
        podsets = traced.workload.podsets
        placement = self.snapshot.find_assignments(podsets, excluded=excluded, reserved=reserved)
        if placement.admitted:
            placement = self.snapshot.numa_zones(podsets, placement)
            scenario.hold(self.snapshot, self.nodes, traced.workload, placement)
        return placement

    def _place_member(self, traced: TracedWorkload) -> tuple[WorkloadPlacement, dict[Path, int]]:
        """As the operator places a member (decide._place): its one pod set by the group's
        rules and state, NUMA zones not counted; and the partition of each of its leaves."""
        ref = traced.group
        assert ref is not None and ref.spec is not None  # the trace gives every member one
        group = self.groups.get(ref.name)
        if group is None:
            group = self.groups[ref.name] = _Group(rules_for(ref.spec, self.snapshot.levels))
        (podset,) = traced.workload.podsets
        growing = self._owned_by_others(ref.name, "affinity") if self.fragmentation_aware else None
        placement, planned = self.snapshot.find_group_assignment(
            podset, group.rules, group.state, self._owned_by_others(ref.name), growing
        )
        if planned is None:
            return placement, {}
        scenario.hold(self.snapshot, self.nodes, traced.workload, placement)
        group.state.add(planned)
        group.members[traced.name] = planned.pods
        return placement, planned.partition_of_leaf

    def release(self, traced: TracedWorkload) -> None:
        placement = self.placements.pop(traced.name)
        scenario.hold(self.snapshot, self.nodes, traced.workload, placement, sign=-1)
        group = self.groups.get(traced.group.name) if traced.group is not None else None
        if group is not None and traced.name in group.members:
            pods = group.members.pop(traced.name)
            group.state.remove(pods, group.rules.partition_level)


def _relaxed(traced: TracedWorkload, now: float) -> Workload:
    """TASTopologyRelaxation on the solver path: each pod set at the stage its wait since
    arrival reached (decide() does this itself on the queue path)."""
    workload = traced.workload
    if not workload.relaxations or not features.enabled(Gate.TAS_TOPOLOGY_RELAXATION):
        return workload
    queued, current = scenario.at(traced.arrival), scenario.at(now)
    podsets = tuple(
        relax(ps, workload.relaxations[ps.name], queued, current)[0]
        if ps.name in workload.relaxations
        else ps
        for ps in workload.podsets
    )
    return replace(workload, podsets=podsets)


def relaxation_times(traced: TracedWorkload) -> list[float]:
    """The seconds of the trace at which one of its pod sets' relaxation stages begins."""
    return sorted(
        traced.arrival + stage.after.total_seconds()
        for stages in traced.workload.relaxations.values()
        for stage in stages[1:]
    )


class _QueueAdmission:
    """With clusterQueues: the admission loop's decision on the operator's cache."""

    def __init__(self, scen: Scenario) -> None:
        self.state = scenario.cluster_state(scen)  # its options carry the trace's gates
        self.default_queue = scen.cluster_queues[0]["metadata"]["name"]
        self.infos: dict[str, Any] = {}
        self.placement_groups = scen.options.placement_groups

    def _queue(self, traced: TracedWorkload) -> str:
        return traced.workload.cluster_queue or self.default_queue

    def weighted_shares(self) -> dict[str, int] | None:
        """With fair sharing on, each ClusterQueue's status.fairSharing.weightedShare."""
        if self.state.fair_sharing is None:
            return None
        tree = self.state.quota_tree()
        return {
            name: fairshare.share(tree, ("cq", name)).rounded()
            for name in sorted(self.state.cluster_queues)
        }

    def in_order(self, ordered: list[TracedWorkload]) -> Iterator[TracedWorkload]:
        """The candidates (in queue order) as the admission loop takes them: with fair sharing,
        Kueue's fair-sharing order across ClusterQueues, each queue in its own order, the
        shares taken afresh after every decision."""
        if self.state.fair_sharing is None:
            yield from ordered
            return
        queues: dict[str, list[TracedWorkload]] = {}
        for traced in ordered:
            queues.setdefault(self._queue(traced), []).append(traced)
        heads = {cq: [self.infos[t.name] for t in waiting] for cq, waiting in queues.items()}
        order = FairSharingOrder(self.state, heads)
        for cq in queues:
            order.push(cq, 0)
        while (head := order.pop()) is not None:
            cq, index = head
            yield queues[cq][index]
            if index + 1 < len(queues[cq]):
                order.push(cq, index + 1)

    def arrive(self, traced: TracedWorkload, now: float) -> None:
        """The Workload exists from its arrival on, pending (and again after an eviction)."""
        info = scenario.workload_info(traced.workload, self._queue(traced), traced.arrival)
        if self.placement_groups and traced.group is not None:
            info = replace(info, placement_group=traced.group)  # decide places it as a member
        self.infos[traced.name] = info
        self.state.upsert_workload(info)

    def try_admit(self, traced: TracedWorkload, now: float) -> Attempt:
        info = self.infos[traced.name]
        cq = self.state.cluster_queues[self._queue(traced)]
        decision = decide(self.state, info, cq, now=scenario.at(now))
        evicted = []
        if decision.preemption is not None:
            # As `tas solve`: the victims' pods are gone at once, then the decision is taken
            # again in their room.
            for target in decision.preemption.targets:
                self.state.delete_workload(*target.workload.key)
                evicted.append(target.workload.name)
            decision = decide(self.state, info, cq, now=scenario.at(now))
        if not decision.admitted:
            return Attempt(False, decision.message, evicted=tuple(evicted))
        assert decision.charge is not None  # an admitted decision holds its charge
        admitted = scenario.admitted_info(info, decision, now)
        self.state.upsert_workload(admitted)
        partitions = {} if decision.group is None else self._hold_group(admitted, decision.group)
        uses = tuple(
            PodSetUse(ps.assignment, ps.requests, partitions)
            for ps in decision.charge.pod_sets
            if ps.assignment is not None
        )
        return Attempt(True, "", uses, tuple(evicted))

    def planning_snapshot(self, traced: TracedWorkload) -> TopologySnapshot | None:
        """Where defragmentation plans for it: the flavor's snapshot when its quota fits
        there (then only the topology keeps it out), and no placement group shapes it."""
        cq = self.state.cluster_queues[self._queue(traced)]
        flavors = topology_flavors_within_quota(self.state, self.infos[traced.name], cq)
        if self.placement_groups or SCENARIO_FLAVOR not in flavors:
            return None
        return self.state.snapshot(SCENARIO_FLAVOR)

    def _hold_group(
        self, member: projections.WorkloadInfo, group: GroupDecision
    ) -> dict[Path, int]:
        """As the admission loop: the member's new partitions are assumed, then the
        PlacementGroup is written (here: taken as the watch would read it back) with the status
        its members' charges give, so that its partitions outlive this member. Returns the
        partition of each of the member's leaves."""
        if group.new_partitions:
            self.state.assumed_partitions[group.key][member.key] = dict(group.new_partitions)
        namespace, name = group.key
        status = placementgroups.status_now(self.state, group.key, group.spec)
        written = {
            "metadata": {"namespace": namespace, "name": name},
            "spec": spec_to_object(group.spec),
            "status": status,
        }
        self.state.upsert_placement_group(projections.placement_group_from_object(written))
        if group.spec.partition_topology is None:
            return {}
        snapshot = self.state.snapshot(group.flavor)
        depth = snapshot.levels.index(group.spec.partition_topology)
        partitions = placementgroups.partitions_of(self.state, group.key)
        out: dict[Path, int] = {}
        for admission in member.admissions:
            for domain in admission.assignment.domains if admission.assignment else ():
                path = snapshot.leaf_path(domain.values)
                out[path] = partitions[path[: depth + 1]]
        return out

    def release(self, traced: TracedWorkload) -> None:
        self.state.delete_workload(scenario.SCENARIO_NAMESPACE, traced.name)


# ---------------------------------------------------------------------------------------------
# The books: what every leaf of the topology has and what the running pods take, kept apart
# from the solver's own, for utilisation and fragmentation.


class Ledger:
    def __init__(self, scen: Scenario) -> None:
        self.levels = scen.levels
        self.hostname_lowest = scen.levels[-1] == HOSTNAME_LEVEL
        counted = [node for node in scen.nodes if self._counts(node, scen)]
        self.leaf_of: dict[tuple[str, ...], int] = {}  # leaf key, as assignments name it
        self.paths: list[tuple[str, ...]] = []  # per leaf, its value at every level
        columns = []
        for node in counted:
            path = tuple(node.labels[level] for level in scen.levels)
            key = (path[-1],) if self.hostname_lowest else path
            if key not in self.leaf_of:
                self.leaf_of[key] = len(self.paths)
                self.paths.append(path)
            columns.append(self.leaf_of[key])
        self.nodes = len(counted)
        resources = {PODS: None}
        for node in counted:
            resources.update(dict.fromkeys(node.allocatable))
        self.row = {name: row for row, name in enumerate(resources)}
        # float64: exact for the integers of any real cluster (below 2**53 milli-units)
        self.allocatable = np.zeros((len(self.row), len(self.paths)))
        self.outside = np.zeros_like(self.allocatable)  # pods outside topology-aware admission
        for node, column in zip(counted, columns, strict=True):
            for name, value in node.allocatable.items():  # pods included: the parser sets it
                self.allocatable[self.row[name], column] += value
            for name, value in node.usage.items():
                if name in self.row:
                    self.outside[self.row[name], column] += value
        self.used = np.zeros_like(self.allocatable)  # by the running workloads' pods
        self.totals = self.allocatable.sum(axis=1)
        self.pods_running = 0

    @staticmethod
    def _counts(node: Any, scen: Scenario) -> bool:
        """Whether the solver counts the node, by its rules: ready, schedulable, every level's
        label and the flavor's node labels."""
        labels = node.labels
        return (
            node.ready
            and not node.unschedulable
            and all(level in labels for level in scen.levels)
            and all(labels.get(k) == v for k, v in scen.flavor.node_labels.items())
        )

    def add(self, uses: Iterable[PodSetUse], sign: int = 1) -> None:
        for use in uses:
            per_pod = with_one_pod(use.requests)
            for domain in use.assignment.domains:
                values = tuple(domain.values)
                key = (values[-1],) if self.hostname_lowest else values
                column = self.leaf_of[key]
                for name, value in per_pod.items():
                    if name in self.row:  # else no node has it, and nothing was placed
                        self.used[self.row[name], column] += sign * value * domain.count
                self.pods_running += sign * domain.count

    def utilisation(self) -> dict[str, float]:
        """Per resource: what the running pods request over all counted nodes' allocatable."""
        used = self.used.sum(axis=1)
        return {
            name: round(float(used[row] / self.totals[row]), DECIMALS) if self.totals[row] else 0.0
            for name, row in self.row.items()
        }

    def fragmentation(self, reference: Reference) -> dict[str, float]:
        """Per resource the reference requests: the fraction of the free amount that lies in
        domains of the reference's level where its pods cannot all fit."""
        free = np.maximum(self.allocatable - self.outside - self.used, 0)
        per_pod = reference.per_pod
        fits = np.full(len(self.paths), np.inf)
        for name, value in per_pod.items():
            row = self.row.get(name)
            column_free = free[row] if row is not None else np.zeros(len(self.paths))
            fits = np.minimum(fits, np.floor(column_free / value))
        domain = reference.domain_of_leaf(self)
        pods_in_domain = np.bincount(domain, weights=fits)
        stranded = pods_in_domain[domain] < reference.count  # per leaf: its domain cannot host
        out = {}
        for name in reference.measured:
            row = self.row.get(name)
            total = free[row].sum() if row is not None else 0.0
            out[name] = round(float(free[row][stranded].sum() / total), DECIMALS) if total else 0.0
        return out


@dataclass
class Reference:
    """The median pod set of the trace (by pod count, ties in trace order): fragmentation asks
    whether a domain of its level could still host all of its pods."""

    workload: str
    podset: PodSetRequest
    level: str  # its required level, else its preferred level, else the lowest (one pod)
    count: int  # its pods; 1 when it has no required or preferred level
    _domains: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def of(cls, trace: Trace) -> Reference | None:
        podsets = [(t.name, ps) for t in trace.workloads for ps in t.workload.podsets]
        if not podsets:
            return None
        ordered = sorted(podsets, key=lambda item: item[1].count)  # stable: trace order
        name, podset = ordered[(len(ordered) - 1) // 2]
        level = podset.topology.required or podset.topology.preferred
        if level is None:
            return cls(name, podset, trace.scenario.levels[-1], 1)
        return cls(name, podset, level, podset.count)

    @property
    def per_pod(self) -> dict[str, int]:
        requests = {r: v for r, v in self.podset.requests.items() if v > 0}
        return {**requests, PODS: ONE_POD}

    @property
    def measured(self) -> list[str]:
        """The resources whose fragmentation is reported: those it requests, else pods."""
        return sorted(r for r, v in self.podset.requests.items() if v > 0) or [PODS]

    def domain_of_leaf(self, ledger: Ledger) -> np.ndarray:
        if self._domains is None:
            depth = ledger.levels.index(self.level) + 1
            ids: dict[tuple[str, ...], int] = {}
            self._domains = np.array(
                [ids.setdefault(path[:depth], len(ids)) for path in ledger.paths], dtype=np.intp
            )
        return self._domains

    def as_report(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "podSet": self.podset.name,
            "count": self.count,
            "requests": {r: format_milli(r, v) for r, v in sorted(self.podset.requests.items())},
            "level": self.level,
        }


# ---------------------------------------------------------------------------------------------
# The event loop.


@dataclass
class _Running:
    traced: TracedWorkload
    number: int  # the admission's sequence number: a stale departure (after an eviction) is
    uses: tuple[PodSetUse, ...]  # skipped
    since: float = 0.0  # admitted at


@dataclass
class _Books:
    """What the report counts, as the loop goes."""

    pods_placed: int = 0
    pods_before_first_failure: int | None = None
    first_failure: dict[str, Any] | None = None
    admitted: set[str] = field(default_factory=set)
    evictions: int = 0
    decision_seconds: list[float] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    group_admitted: dict[str, set[str]] = field(default_factory=dict)  # group -> members
    group_pods: dict[str, int] = field(default_factory=dict)  # group -> pods placed
    moves: int = 0  # workloads moved by defragmentation (TASDefragmentation)


def simulate(
    trace: Trace, observe: Observer | None = None, waiting: WaitingObserver | None = None
) -> dict[str, Any]:
    """Replay the trace and return its report (docs/reference/trace-format.md)."""
    with features.activated(trace.gates):  # decisions read the trace's gates where they act
        return _Simulation(trace, observe, waiting).run()


class _Simulation:
    def __init__(
        self, trace: Trace, observe: Observer | None, waiting: WaitingObserver | None = None
    ) -> None:
        scen = trace.scenario
        self.trace = trace
        self.observe = observe
        self.observe_waiting = waiting
        self.admission = _QueueAdmission(scen) if scen.cluster_queues else _SolverAdmission(scen)
        self.ledger = Ledger(scen)
        self.reference = Reference.of(trace)
        self.books = _Books()
        self.arrivals = sorted(trace.workloads, key=lambda t: (t.arrival, t.index))
        self.next_arrival = 0  # in self.arrivals
        self.waiting_since: dict[str, float] = {}  # its arrival, or its last eviction
        self.pending: list[TracedWorkload] = []
        self.running: dict[str, _Running] = {}
        self.departures: list[tuple[float, int, str]] = []  # a heap: (end, number, name)
        self.tried: set[str] = set()
        self.reasons: dict[str, str] = {}  # a waiting workload -> why its last try failed
        # TASTopologyRelaxation: (time, arrival order, name) at which a pod set's next stage
        # begins; a waiting workload is tried again then, as the operator's timer does.
        self.relaxing: list[tuple[float, int, str]] = []
        self.relaxation = features.enabled(Gate.TAS_TOPOLOGY_RELAXATION)
        self.mover = Mover() if trace.gates.enabled(features.Gate.TAS_DEFRAGMENTATION) else None
        self.moved_out: set[str] = set()  # moved, not admitted again yet: its pods count once

    def run(self) -> dict[str, Any]:
        now = 0.0
        while (upcoming := self._next_event()) is not None:
            now = upcoming
            freed = self._depart(now)
            newcomers = self._arrive(now)
            # A workload that did not fit cannot fit before capacity comes back (or its next
            # relaxation stage begins): as the operator, retry the pending ones only then,
            # else only try the newcomers.
            candidates = self.pending if freed else newcomers + self._relaxing_now(now)
            if self._admission_pass(candidates, now):
                self._admission_pass(self.pending, now)  # evictions may leave room for more
            self._record(now)
        return _report(self.trace, self.ledger, self.reference, self.books, now)

    @staticmethod
    def _queue_order(traced: TracedWorkload) -> tuple:
        return (-traced.workload.priority, traced.arrival, traced.index)

    def _stale(self, departure: tuple[float, int, str]) -> bool:
        """Its workload was evicted since: a new admission has a departure of its own."""
        _, number, name = departure
        return name not in self.running or self.running[name].number != number

    def _next_event(self) -> float | None:
        while self.departures and self._stale(self.departures[0]):
            heapq.heappop(self.departures)
        upcoming = [self.departures[0][0]] if self.departures else []
        if self.relaxing:
            waiting = {t.name for t in self.pending}
            while self.relaxing and self.relaxing[0][2] not in waiting:
                heapq.heappop(self.relaxing)  # admitted since: no event of its own
        if self.relaxing:
            upcoming.append(self.relaxing[0][0])
        if self.next_arrival < len(self.arrivals):
            upcoming.append(self.arrivals[self.next_arrival].arrival)
        return min(upcoming, default=None)

    def _depart(self, now: float) -> bool:
        """Release every workload whose time is up; whether any did."""
        freed = False
        while self.departures and self.departures[0][0] <= now:
            departure = heapq.heappop(self.departures)
            if self._stale(departure):
                continue
            done = self.running.pop(departure[2])
            self.admission.release(done.traced)
            self.ledger.add(done.uses, sign=-1)
            freed = True
        return freed

    def _arrive(self, now: float) -> list[TracedWorkload]:
        newcomers = []
        while (
            self.next_arrival < len(self.arrivals)
            and self.arrivals[self.next_arrival].arrival <= now
        ):
            traced = self.arrivals[self.next_arrival]
            self.next_arrival += 1
            self.waiting_since[traced.name] = traced.arrival
            self.admission.arrive(traced, now)
            if self.relaxation:
                for when in relaxation_times(traced):
                    heapq.heappush(self.relaxing, (when, traced.index, traced.name))
            newcomers.append(traced)
        self.pending.extend(newcomers)
        return newcomers

    def _relaxing_now(self, now: float) -> list[TracedWorkload]:
        """The waiting workloads a relaxation stage of which begins now (not yet arrived
        ones are tried on arrival)."""
        due: set[str] = set()
        while self.relaxing and self.relaxing[0][0] <= now:
            due.add(heapq.heappop(self.relaxing)[2])
        return [t for t in self.pending if t.name in due]

    def _admission_pass(self, candidates: list[TracedWorkload], now: float) -> int:
        """Try each candidate in queue order; the number of workloads evicted meanwhile."""
        evicted = 0
        planned = False  # defragmentation plans for the first workload that does not fit
        for traced in self._in_order(sorted(candidates, key=self._queue_order)):
            first_try = traced.name not in self.tried
            self.tried.add(traced.name)
            started = time.perf_counter()
            attempt = self.admission.try_admit(traced, now)
            if not attempt.admitted and self.mover is not None and not planned:
                planned = True
                moved = self._defragment(traced, now)
                if moved:
                    evicted += moved
                    attempt = self.admission.try_admit(traced, now)
            self.books.decision_seconds.append(time.perf_counter() - started)
            for name in attempt.evicted:
                self._evict(name, now)
                evicted += 1
            if attempt.admitted:
                self.reasons.pop(traced.name, None)
                self._admit(traced, attempt, now)
                continue
            self.reasons[traced.name] = attempt.message
            if first_try and self.books.first_failure is None:
                self.books.pods_before_first_failure = self.books.pods_placed
                self.books.first_failure = {
                    "time": now,
                    "workload": traced.name,
                    "message": attempt.message,
                }
        return evicted

    def _in_order(self, ordered: list[TracedWorkload]) -> Iterable[TracedWorkload]:
        if isinstance(self.admission, _QueueAdmission):
            return self.admission.in_order(ordered)
        return ordered

    def _defragment(self, traced: TracedWorkload, now: float) -> int:
        """Move the running workloads the plan names, if there is a plan; how many."""
        assert self.mover is not None
        snapshot = self.admission.planning_snapshot(traced)
        if snapshot is None:
            return 0
        running = [
            Running(
                name,
                r.traced.workload.cluster_queue or "",
                r.traced.workload.podsets,
                [use.assignment for use in r.uses],
                r.since,
                r.traced.movable,
                r.traced.movable_after,
            )
            for name, r in self.running.items()
        ]
        found = self.mover.plan(snapshot, traced.workload.podsets, running, now)
        if isinstance(found, str):
            return 0
        for name in map(str, found.moved):  # this simulation names workloads by str
            moved = self.running[name].traced
            self.admission.release(moved)
            self._evict(name, now)
            self.mover.record(moved.workload.cluster_queue or "", now)
            self.moved_out.add(name)
            self.books.moves += 1
        return len(found.moved)

    def _admit(self, traced: TracedWorkload, attempt: Attempt, now: float) -> None:
        number = len(self.books.waits)  # one wait per admission: a unique number
        self.running[traced.name] = _Running(traced, number, attempt.uses, now)
        self.ledger.add(attempt.uses)
        self.pending.remove(traced)
        if traced.name in self.moved_out:  # placed again after a move: counted once
            self.moved_out.discard(traced.name)
        else:
            self.books.pods_placed += traced.pods
        self.books.admitted.add(traced.name)
        self.books.waits.append(now - self.waiting_since[traced.name])
        if traced.group is not None:
            group = traced.group.name
            self.books.group_admitted.setdefault(group, set()).add(traced.name)
            self.books.group_pods[group] = self.books.group_pods.get(group, 0) + traced.pods
        if traced.duration is not None:
            heapq.heappush(self.departures, (now + traced.duration, number, traced.name))

    def _evict(self, name: str, now: float) -> None:
        """Preempted: its pods leave now, and it waits in the queue again."""
        victim = self.running.pop(name)
        self.ledger.add(victim.uses, sign=-1)
        self.waiting_since[name] = now
        self.admission.arrive(victim.traced, now)
        self.pending.append(victim.traced)
        self.books.evictions += 1

    def _record(self, now: float) -> None:
        shares = self.admission.weighted_shares()
        self.books.timeline.append(
            {
                "time": now,
                "utilisation": self.ledger.utilisation(),
                "fragmentation": (
                    self.ledger.fragmentation(self.reference) if self.reference else {}
                ),
                "podsRunning": self.ledger.pods_running,
                "workloadsRunning": len(self.running),
                "workloadsWaiting": len(self.pending),
                **({"weightedShare": shares} if shares is not None else {}),
            }
        )
        if self.observe is not None:
            self.observe(now, {name: r.uses for name, r in self.running.items()})
        if self.observe_waiting is not None:
            self.observe_waiting(now, {t.name: self.reasons.get(t.name, "") for t in self.pending})


def _report(
    trace: Trace, ledger: Ledger, reference: Reference | None, books: _Books, end: float
) -> dict[str, Any]:
    decisions = sorted(books.decision_seconds)
    waits = sorted(books.waits)
    members = Counter(t.group.name for t in trace.workloads if t.group is not None)
    groups_report = {
        name: {
            "members": count,
            "membersAdmitted": len(books.group_admitted.get(name, ())),
            "podsPlaced": books.group_pods.get(name, 0),
        }
        for name, count in sorted(members.items())
    }
    return {
        "admission": "clusterQueues" if trace.scenario.cluster_queues else "solver",
        "featureGates": trace.gates.as_dict(),
        "nodes": ledger.nodes,
        "workloads": len(trace.workloads),
        "pods": sum(t.pods for t in trace.workloads),
        "end": end,
        "podsPlacedBeforeFirstFailure": (
            books.pods_placed
            if books.pods_before_first_failure is None
            else books.pods_before_first_failure
        ),
        "podsPlaced": books.pods_placed,
        "firstFailure": books.first_failure,
        "workloadsAdmitted": len(books.admitted),
        "workloadsNeverAdmitted": len(trace.workloads) - len(books.admitted),
        "evictions": books.evictions,
        "waitSeconds": {
            "median": _rank(waits, 0.5),
            "p90": _rank(waits, 0.9),
            "max": _rank(waits, 1.0),
        },
        "decisions": {
            "count": len(decisions),
            "medianMs": round(_rank(decisions, 0.5) * 1e3, 3),
            "p90Ms": round(_rank(decisions, 0.9) * 1e3, 3),
            "maxMs": round(_rank(decisions, 1.0) * 1e3, 3),
        },
        "fragmentationReference": reference.as_report() if reference else None,
        **(
            {"defragmentation": _moves_report(books, end)}
            if trace.gates.enabled(features.Gate.TAS_DEFRAGMENTATION)
            else {}
        ),
        **({"groups": groups_report} if groups_report else {}),
        **_fair_sharing_report(trace, books),
        "timeline": books.timeline,
    }


def _fair_sharing_report(trace: Trace, books: _Books) -> dict[str, Any]:
    """With fair sharing on: the strategies, and each ClusterQueue's weighted share at the end
    and at its highest (the timeline has it at every event)."""
    fair = trace.scenario.fair_sharing.fair_sharing
    if fair is None:
        return {}
    series = [entry["weightedShare"] for entry in books.timeline if "weightedShare" in entry]
    names = sorted(series[-1]) if series else []
    return {
        "fairSharing": {
            "preemptionStrategies": list(fair.preemption_strategies),
            "weightedShare": {
                name: {"final": series[-1][name], "max": max(s[name] for s in series)}
                for name in names
            },
        }
    }


def _moves_report(books: _Books, end: float) -> dict[str, Any]:
    admissions = len(books.admitted)  # workloads admitted (a moved one counts once)
    return {
        "moves": books.moves,
        "movesPerHour": round(books.moves / (end / 3600), DECIMALS) if end else 0.0,
        "movesPerAdmission": round(books.moves / admissions, DECIMALS) if admissions else 0.0,
    }


def _rank(ordered: list[float], fraction: float) -> float:
    """Nearest rank (as `tas solve --stats`); 0 without samples."""
    if not ordered:
        return 0.0
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


# ---------------------------------------------------------------------------------------------
# The command.


def compare(trace: Trace, other: Trace) -> dict[str, Any]:
    """Both reports side by side, and how many more (or fewer) pods the second one placed
    before its first failure."""
    base, changed = simulate(trace), simulate(other)
    before = base["podsPlacedBeforeFirstFailure"]
    after = changed["podsPlacedBeforeFirstFailure"]
    return {
        "base": base,
        "compared": changed,
        "podsPlacedBeforeFirstFailureRatio": round(after / before, DECIMALS) if before else None,
    }


def main(
    path: str,
    stdout: IO[str],
    stderr: IO[str],
    plot: str | None = None,
    compare_gates: str | None = None,
    output: str | None = None,
) -> int:
    """Exit 0 with the report as JSON on stdout; 1 with one line on stderr for a trace that is
    malformed or a plot that cannot be written; 2 for a bad --compare. `output` is `-o`: by
    default a summary on a terminal, the JSON elsewhere (offline/summary.py)."""
    overrides: dict[str, bool] = {}
    if compare_gates is not None:
        try:
            overrides = dict(features.parse(compare_gates).values)
        except features.FeatureGateError as error:
            stderr.write(f"tas simulate: --compare: {error}\n")
            return 2
        if not overrides:
            stderr.write("tas simulate: --compare: expected NAME=true|false[,...]\n")
            return 2
    try:
        trace = tracefile.read(path)
        other = tracefile.read(path, overrides) if overrides else None
    except ScenarioError as error:
        stderr.write(scenario.error_line(error) + "\n")
        return 1
    if other is None:
        result = simulate(trace)
        runs = [("trace's gates", result)]
    else:
        assert compare_gates is not None  # `other` is the trace read with its overrides
        result = compare(trace, other) | {"gates": compare_gates}
        runs = [("trace's gates", result["base"]), (compare_gates, result["compared"])]
    if plot is not None:
        from tas.offline.simulate import plot as plotting

        try:
            plotting.write(plot, runs)
        except OSError as error:
            stderr.write(f"tas simulate: --plot: cannot write {plot}: {error}\n")
            return 1
    summary.write(result, summary.chosen(output, stdout), stdout, dumps, summary.simulate_text)
    return 0


def dumps(value: Any, indent: str = "") -> str:
    """JSON that reads well and stays short: below the top, a value whose JSON fits in WIDE
    characters takes one line (a timeline entry), a longer one a line per member."""
    compact = json.dumps(value)
    if (indent and len(compact) <= WIDE) or not isinstance(value, dict | list) or not value:
        return compact
    inner = indent + " "
    if isinstance(value, dict):
        members = [f"{inner}{json.dumps(k)}: {dumps(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(members) + "\n" + indent + "}"
    return "[\n" + ",\n".join(inner + dumps(v, inner) for v in value) + "\n" + indent + "]"
