"""One admission decision: quota, then topology, flavor by flavor, on the cache's snapshot.

Pure with respect to the cluster: it reads the state and returns what to write. The loop
assumes the returned charge in the cache before it writes the status.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from tas import features
from tas.admission import fair_preemption, preemption
from tas.admission.preemption import Preemption
from tas.api import topologyassignment
from tas.api.annotations import TopologyRequestError, validate_levels, validate_pod_set_groups
from tas.api.constants import (
    ALLOW_EXCLUSIVE_PLACEMENT_GROUPS,
    DRAINING_LABEL,
    DRAINING_VALUE,
    MAY_STOP_SEARCH,
    NEVER,
    PLACEMENT_GROUP_EXCLUSIVE,
    PODSET_TOPOLOGY_RELAXATION,
    TRY_NEXT_FLAVOR,
)
from tas.api.format import format_milli
from tas.api.placementgroups import SPEC_FIELDS, GroupSpec, PlacementGroupError, rules_for
from tas.api.relaxation import Progress, relax, validate_relaxation_levels
from tas.cache import placementgroups
from tas.cache.projections import ClusterQueueInfo, FlavorQuota, ResourceGroup, WorkloadInfo
from tas.cache.quota import QuotaTree
from tas.cache.state import Charge, ClusterState, PodSetCharge
from tas.features import Gate
from tas.solver import TopologySnapshot, groups
from tas.solver.types import (
    PODS,
    PodSetRequest,
    TopologyAssignment,
    WorkloadPlacement,
    with_one_pod,
)


@dataclass(frozen=True)
class Decision:
    admitted: bool
    message: str  # why not, or a note on success
    admission: dict[str, Any] | None = None  # status.admission, Kueue's v1beta1 shape
    charge: Charge | None = None
    invalid: bool = False  # the request itself is wrong: no capacity change will help
    # Not admitted, but these victims' eviction makes room; `charge` is then what the
    # preemptor will take once they are gone (held for the rest of the cycle).
    preemption: Preemption | None = None
    # A placement group's member: the group to write before the admission (ours).
    group: GroupDecision | None = None
    # Not admitted, and a pod set relaxes to its next stage then (TASTopologyRelaxation): the
    # loop decides again at that time.
    relax_at: datetime | None = None


@dataclass(frozen=True)
class GroupDecision:
    key: tuple[str, str]
    spec: GroupSpec
    flavor: str
    new_partitions: Mapping[tuple[str, ...], int]


def _shaped_by_groups(state: ClusterState, workload: WorkloadInfo, flavor: str) -> bool:
    if not state.options.placement_groups:
        return False
    if workload.group_key is not None:
        return True
    return bool(placementgroups.owned_by_others(state, None, flavor, state.snapshot(flavor)))


def _place(
    state: ClusterState, workload: WorkloadInfo, cq: ClusterQueueInfo, flavor: str
) -> tuple[WorkloadPlacement, GroupDecision | None]:
    """The flavor's placement of the workload: (WorkloadPlacement, GroupDecision | None).
    With placement groups on, every workload keeps out of domains exclusive groups hold, and
    a member is placed by its group's constraints; raises PlacementGroupError."""
    snapshot = state.snapshot(flavor)
    if not state.options.placement_groups:
        return snapshot.find_assignments(workload.pod_sets), None
    if workload.placement_group_error:
        raise PlacementGroupError(workload.placement_group_error)
    key = workload.group_key
    owned = placementgroups.owned_by_others(state, key, flavor, snapshot)
    if key is None or workload.placement_group is None:
        layout = snapshot.group_layout()
        excluded = groups.excluded_leaves(layout, owned) if owned else None
        growing = _growing_domains(state, key, flavor, snapshot)
        reserved = groups.excluded_leaves(layout, growing) if growing else None
        placement = snapshot.find_assignments(
            workload.pod_sets, excluded=excluded, reserved=reserved
        )
        return placement, None
    ref = workload.placement_group
    group = state.placement_groups.get(key)
    # The object's constraints; before the watch shows it, those of the members holding
    # capacity (the first member's write makes the object from them).
    held = group.spec if group is not None else placementgroups.held_spec(state, key)
    spec = held or ref.spec or GroupSpec()
    if held is not None and ref.spec is not None and ref.spec != held:
        fields = ", ".join(SPEC_FIELDS[f] for f in ref.spec.differences(held))
        raise PlacementGroupError(
            f"the pod template's placement-group annotations differ from PlacementGroup "
            f"{ref.name} in {fields}"
        )
    if spec.exclusive_topology is not None:
        _check_exclusive_grant(state, key, cq)
    rules = rules_for(spec, snapshot.levels)
    current = placementgroups.group_state(state, key, rules, flavor, snapshot)
    growing = _growing_domains(state, key, flavor, snapshot)
    placement, planned = snapshot.find_group_assignment(
        workload.pod_sets[0], rules, current, owned, growing
    )
    if planned is None:
        return placement, None
    return placement, GroupDecision(key, spec, flavor, dict(planned.new_partition_domains))


def _growing_domains(
    state: ClusterState, key: tuple[str, str] | None, flavor: str, snapshot: TopologySnapshot
) -> dict[int, set[tuple[str, ...]]] | None:
    """With the fragmentation-aware profile, the affinity domains of groups other than `key`,
    kept for them to grow in; None without it."""
    if not state.options.fragmentation_aware:
        return None
    return placementgroups.owned_by_others(state, key, flavor, snapshot, attr="affinity_topology")


def _check_exclusive_grant(state: ClusterState, key: tuple[str, str], cq: ClusterQueueInfo) -> None:
    """An exclusive group keeps every other tenant out of whole domains: only a ClusterQueue
    an administrator annotated may admit its members, and its domains are charged to that one
    queue. Raises PlacementGroupError."""
    if not cq.allows_exclusive_groups:
        raise PlacementGroupError(
            f"placement group {key[1]} takes domains exclusively ({PLACEMENT_GROUP_EXCLUSIVE}), "
            f"which ClusterQueue {cq.name} does not allow: an administrator allows it with the "
            f'annotation {ALLOW_EXCLUSIVE_PLACEMENT_GROUPS}: "true" on the ClusterQueue'
        )
    hold = state.exclusive_hold(key)
    if hold is not None and hold.cluster_queue != cq.name:
        raise PlacementGroupError(
            f"placement group {key[1]} holds its exclusive domains through ClusterQueue "
            f"{hold.cluster_queue}: its members are admitted through that queue only"
        )


def _exclusive_quota(
    state: ClusterState,
    tree: QuotaTree,
    cq: ClusterQueueInfo,
    covered: frozenset[str],
    charge: Charge,
    group: GroupDecision,
) -> str | None:
    """A member of an exclusive group takes its requests and the rest of any domain it adds to
    the group's: both count against the queue's quota. None when they fit, else why not."""
    spec = group.spec
    if spec.exclusive_topology is None:
        return None
    before = state.exclusive_hold(group.key, spec)
    after = state.exclusive_hold(group.key, spec, joining=charge)
    held_before = before.usage if before is not None else {}
    held_after = after.usage if after is not None else {}
    for resource in sorted(covered):
        own = sum(ps.count * ps.per_pod.get(resource, 0) for ps in charge.pod_sets)
        more = own + held_after.get(resource, 0) - held_before.get(resource, 0)
        free = tree.available(cq.name, (group.flavor, resource))
        if more > free:
            return (
                f"insufficient unused quota for {resource} in flavor {group.flavor}, "
                f"{format_milli(resource, more - free)} more needed: placement group "
                f"{group.key[1]} takes whole {spec.exclusive_topology} domains, whose capacity "
                f"counts against ClusterQueue {cq.name}"
            )
    return None


def _total(pod_sets: tuple[PodSetRequest, ...]) -> dict[str, int]:
    total: dict[str, int] = {}
    for ps in pod_sets:
        for resource, value in with_one_pod(ps.requests).items():
            total[resource] = total.get(resource, 0) + ps.count * value
    return total


@dataclass(frozen=True)
class _QuotaFit:
    message: str | None  # why not now (the first resource short, as Kueue words it)
    short: frozenset[str] = frozenset()  # resources short of available quota
    preemptible: bool = False  # evicting others could make room (Kueue's Preempt mode)
    borrows: bool = False  # fits, or would fit, only beyond nominal quota


def _group_for(cq: ClusterQueueInfo, need: Mapping[str, int]) -> ResourceGroup | None:
    """The first resource group that covers every requested resource (`pods` aside)."""
    requested = {r for r in need if r != PODS}
    return next((g for g in cq.resource_groups if requested <= g.covered), None)


def _quota_fit(
    tree: QuotaTree,
    cq: ClusterQueueInfo,
    fq: FlavorQuota,
    covered: frozenset[str],
    need: Mapping[str, int],
    fair_sharing: bool = False,
) -> _QuotaFit:
    """The flavor's quota for this request, cohort included (Kueue's fitsResourceQuota):
    fits now, fits once others are preempted, or never fits (beyond all it could borrow)."""
    first: str | None = None
    short: set[str] = set()
    borrows, preemptible = False, True
    node = ("cq", cq.name)
    for resource in sorted(covered):
        want = need.get(resource, 0)
        if not want:
            continue
        fr = (fq.flavor, resource)
        borrows = borrows or tree.borrowing_with(node, fr, want)
        free = tree.available(cq.name, fr)
        if want <= free:
            continue
        short.add(resource)
        if first is None:
            more = format_milli(resource, want - free)
            first = f"insufficient unused quota for {resource} in flavor {fq.flavor}, {more} more needed"
        if want > tree.potential(cq.name, fr):
            preemptible = False  # more than it could ever have
        elif not (
            want <= fq.nominal.get(resource, 0)
            or tree.lowest_subtree_that_fits(cq.name, fr, want)
            or _may_preempt_while_borrowing(cq, fair_sharing)
        ):
            preemptible = False
    return _QuotaFit(first, frozenset(short), preemptible and bool(short), borrows)


def _may_preempt_while_borrowing(cq: ClusterQueueInfo, fair_sharing: bool) -> bool:
    """Kueue's canPreemptWhileBorrowing: borrowWithinCohort allows it, or fair sharing is on
    and the queue may reclaim within its cohort."""
    return cq.borrow_within_cohort != NEVER or (fair_sharing and cq.reclaim_within_cohort != NEVER)


def _preempts(cq: ClusterQueueInfo) -> bool:
    return cq.within_cluster_queue != NEVER or (
        cq.cohort is not None and cq.reclaim_within_cohort != NEVER
    )


def _admission(
    cq: str,
    workload: WorkloadInfo,
    flavor: str,
    covered: frozenset[str],
    placements: Mapping[str, TopologyAssignment] | None,
) -> dict[str, Any]:
    by_name = placements or {}
    out = []
    for ps in workload.pod_sets:
        # As Kueue: `pods` is listed only when the ClusterQueue covers it.
        per_pod = with_one_pod(ps.requests) if PODS in covered else ps.requests
        usage = {r: format_milli(r, ps.count * v) for r, v in sorted(per_pod.items())}
        flavors = {r: flavor for r in sorted(per_pod) if r in covered}
        if not flavors:
            # A pod set with no covered request (BestEffort) would record no flavor, and its
            # charge could not be rebuilt from the status after a restart.
            flavors = {PODS: flavor}
        entry = {
            "name": ps.name,
            "flavors": flavors,
            "resourceUsage": usage,
            "count": ps.count,
        }
        if ps.name in by_name:
            entry["topologyAssignment"] = topologyassignment.to_stored(by_name[ps.name])
        out.append(entry)
    return {"clusterQueue": cq, "podSetAssignments": out}


def _check_requests(workload: WorkloadInfo, levels: tuple[str, ...]) -> None:
    validate_pod_set_groups(workload.pod_sets)
    for ps in workload.pod_sets:
        validate_levels(ps.topology, levels)
    if features.enabled(Gate.TAS_TOPOLOGY_RELAXATION):
        for stages in workload.relaxations.values():
            validate_relaxation_levels(stages, levels)


def _relaxed(workload: WorkloadInfo, now: datetime) -> tuple[WorkloadInfo, list[Progress]]:
    """TASTopologyRelaxation: the workload with each pod set at its current stage, and where
    each pod set that relaxes stands."""
    pod_sets, progress = [], []
    for ps in workload.pod_sets:
        stages = workload.relaxations.get(ps.name)
        if not stages or not ps.topology.required:
            pod_sets.append(ps)
            continue
        relaxed, where = relax(ps, stages, workload.queued_at, now)
        pod_sets.append(relaxed)
        progress.append(where)
    return replace(workload, pod_sets=tuple(pod_sets)), progress


def _with_progress(decision: Decision, progress: list[Progress]) -> Decision:
    """A decision that did not admit says where each relaxing pod set stands."""
    if decision.admitted or not progress:
        return decision
    stages = "; ".join(p.describe() for p in progress)
    upcoming = [p.next_at for p in progress if p.next_at is not None]
    return replace(
        decision,
        message=f"{decision.message}. Topology relaxation ({PODSET_TOPOLOGY_RELAXATION}): {stages}",
        relax_at=min(upcoming) if upcoming else None,
    )


def decide(
    state: ClusterState,
    workload: WorkloadInfo,
    cq: ClusterQueueInfo,
    now: datetime | None = None,
) -> Decision:
    """Admit on the first flavor that fits; failing that, find whom to preempt in the first
    flavor where preemption makes room. `now` orders victims never admitted by a written
    QuotaReserved time (Kueue takes the current time for them).

    The steps for one workload, as Kueue's scheduler takes them in schedule():
    1. a request that cannot be read is refused for good;
    2. the resource group covering every requested resource is found, or none is;
    3. its flavors are tried in order (topology request, quota, placement: _FlavorSearch);
    4. a fit by borrowing, kept while a later flavor might fit without, wins over preemption;
    5. failing a fit, preemption, in the first flavor where evicting others makes room;
    6. failing that, the reasons every flavor gave."""
    now = now or datetime.now(UTC).replace(tzinfo=None)
    # 1. The request itself.
    if workload.spec_error:
        return Decision(False, workload.spec_error, invalid=True)
    relaxing = workload.relaxations or workload.relaxation_error
    if relaxing and features.enabled(Gate.TAS_TOPOLOGY_RELAXATION):
        if workload.relaxation_error:
            return Decision(False, workload.relaxation_error, invalid=True)
        relaxed, progress = _relaxed(workload, now)
        return _with_progress(_decide(state, relaxed, cq, now), progress)
    return _decide(state, workload, cq, now)


def _decide(
    state: ClusterState, workload: WorkloadInfo, cq: ClusterQueueInfo, now: datetime
) -> Decision:
    """decide()'s steps 1 to 6 for a workload whose request is as it is tried now."""
    if not workload.pod_sets:
        return Decision(False, "spec.podSets is empty", invalid=True)
    # 2. The resource group.
    need = _total(workload.pod_sets)
    group = _group_for(cq, need)
    if group is None:
        requested = {r for r in need if r != PODS}
        missing = sorted(requested - set().union(*(g.covered for g in cq.resource_groups)))
        return Decision(
            False, f"resource(s) {', '.join(missing)} not covered by ClusterQueue {cq.name}"
        )
    # 3. The flavors, in order.
    search = _FlavorSearch(state, workload, cq, group, need, now, state.quota_tree())
    for fq in group.flavors:
        decision = search.try_flavor(fq)
        if decision is not None:
            return decision
    # 4. Kueue's default preference: borrowing over preemption.
    if search.borrowing is not None:
        return search.borrowing
    # 5. Preemption, where it makes room.
    for fq, short in search.preemptible:
        decision = search.preempt_in(fq, short)
        if decision is not None:
            return decision
    # 6. Why not.
    message = _unassigned(workload, search.reasons)
    if search.why:  # beyond Kueue, which says nothing more: why evicting others would not help
        message += f". No preemption: {'; '.join(dict.fromkeys(search.why))}"
    return Decision(False, message)


@dataclass
class _FlavorSearch:
    """One decision's walk over the flavors of a resource group, and what it learns on the
    way."""

    state: ClusterState
    workload: WorkloadInfo
    cq: ClusterQueueInfo
    group: ResourceGroup
    need: dict[str, int]
    now: datetime
    tree: QuotaTree
    reasons: list[str] = field(default_factory=list)  # why each flavor does not fit now
    why: list[str] = field(default_factory=list)  # why preemption found no victims, per flavor
    borrowing: Decision | None = None  # a fit by borrowing, kept while a later flavor may fit
    # Flavors where evicting others could make room, with the (flavor, resource) pairs short
    # there: tried once no flavor fits (whenCanPreempt: TryNextFlavor), or at once when the
    # queue stops at the first flavor where preemption makes room (MayStopSearch).
    preemptible: list[tuple[FlavorQuota, frozenset[tuple[str, str]]]] = field(default_factory=list)

    def try_flavor(self, fq: FlavorQuota) -> Decision | None:
        """The decision to return now, or None to go on to the next flavor."""
        flavor = self.state.flavors[fq.flavor]
        # As Kueue, the flavor must suit the topology request before its quota is looked at.
        if flavor.topology_name:
            try:
                _check_requests(
                    self.workload,
                    self.state.topologies[flavor.topology_name],
                )
            except TopologyRequestError as exc:
                return Decision(False, str(exc), invalid=True)
        elif any(not ps.topology.implied for ps in self.workload.pod_sets):
            self.reasons.append(f"flavor {fq.flavor} does not support TopologyAwareScheduling")
            return None
        fair = self.state.fair_sharing is not None
        fit = _quota_fit(self.tree, self.cq, fq, self.group.covered, self.need, fair)
        if fit.message:
            self.reasons.append(fit.message)
            if not fit.preemptible:
                return None
            return self._preempt_or_queue(fq, frozenset((fq.flavor, r) for r in fit.short))
        if not flavor.topology_name:
            return self._fits(fq, fit, None, None)
        return self._place(fq, fit)

    def _place(self, fq: FlavorQuota, fit: _QuotaFit) -> Decision | None:
        """Within quota on a TAS flavor: the topology's placement."""
        try:
            result, group_decision = _place(self.state, self.workload, self.cq, fq.flavor)
        except PlacementGroupError as exc:
            return Decision(False, str(exc), invalid=True)
        if not result.admitted:
            self.reasons.append(
                (result.failure or "does not fit") + _draining_note(self.state, self.workload, fq)
            )
            if _shaped_by_groups(self.state, self.workload, fq.flavor):
                # Preemption simulates plain placements: it would evict for room the group's
                # constraints (or exclusive domains) keep the workload from using.
                return None
            # Kueue: every resource of the pod set in this flavor needs preemption.
            short = frozenset((fq.flavor, r) for r in self.group.covered if self.need.get(r))
            return self._preempt_or_queue(fq, short)
        placements = {p.name: p.assignment for p in result.podsets}
        if group_decision is not None:
            charge = _charge(self.cq, self.workload, fq.flavor, placements)
            held = _exclusive_quota(
                self.state, self.tree, self.cq, self.group.covered, charge, group_decision
            )
            if held:
                self.reasons.append(held)
                return None
        return self._fits(fq, fit, placements, group_decision)

    def _fits(
        self,
        fq: FlavorQuota,
        fit: _QuotaFit,
        placements: Mapping[str, TopologyAssignment] | None,
        group_decision: GroupDecision | None,
    ) -> Decision | None:
        """Admitted in this flavor; but a fit by borrowing waits while a later flavor may fit
        without (whenCanBorrow: TryNextFlavor)."""
        covered = self.group.covered
        decision = Decision(
            True,
            f"Quota reserved in ClusterQueue {self.cq.name}",
            admission=_admission(self.cq.name, self.workload, fq.flavor, covered, placements),
            charge=_charge(self.cq, self.workload, fq.flavor, placements),
            group=group_decision,
        )
        if fit.borrows and self.cq.when_can_borrow == TRY_NEXT_FLAVOR:
            self.borrowing = self.borrowing or decision
            return None
        return decision

    def _preempt_or_queue(
        self, fq: FlavorQuota, short: frozenset[tuple[str, str]]
    ) -> Decision | None:
        """Short of room in this flavor: preempt now (MayStopSearch), or after every flavor."""
        if not _preempts(self.cq):
            return None
        if self.cq.when_can_preempt == MAY_STOP_SEARCH:
            return self.preempt_in(fq, short)
        self.preemptible.append((fq, short))
        return None

    def preempt_in(self, fq: FlavorQuota, short: frozenset[tuple[str, str]]) -> Decision | None:
        requests = {(fq.flavor, r): self.need[r] for r in self.group.covered if self.need.get(r)}
        find = preemption.find if self.state.fair_sharing is None else fair_preemption.find
        found = find(self.state, self.tree, self.workload, self.cq, fq, requests, short, self.now)
        if isinstance(found, str):
            self.why.append(found)
            return None
        charge = _charge(self.cq, self.workload, fq.flavor, found.placements)
        return Decision(
            False, _unassigned(self.workload, self.reasons), charge=charge, preemption=found
        )


def _draining_note(state: ClusterState, workload: WorkloadInfo, fq: FlavorQuota) -> str:
    """TASDrainingDomains: when the workload did not fit, whether it would with the draining
    nodes (the solver run again without taking them out), said so that nobody waits unaware."""
    if not state.options.draining_domains:
        return ""
    if not any(node.draining for node in state.nodes.values()):
        return ""
    if not state.snapshot_with_draining(fq.flavor).find_assignments(workload.pod_sets).admitted:
        return ""
    return (
        f". It would fit on nodes marked draining ({DRAINING_LABEL}={DRAINING_VALUE}), "
        "which take no new workloads"
    )


def _unassigned(workload: WorkloadInfo, reasons: list[str]) -> str:
    names = ", ".join(ps.name for ps in workload.pod_sets)
    return f"couldn't assign flavors to pod set {names}: {'; '.join(reasons)}"


def _charge(
    cq: ClusterQueueInfo,
    workload: WorkloadInfo,
    flavor: str,
    placements: Mapping[str, TopologyAssignment] | None,
) -> Charge:
    return Charge(
        cluster_queue=cq.name,
        pod_sets=tuple(
            PodSetCharge(
                name=ps.name,
                flavor=flavor,
                count=ps.count,
                per_pod=with_one_pod(ps.requests),
                assignment=(placements or {}).get(ps.name),
            )
            for ps in workload.pod_sets
        ),
    )


def borrows_first(state: ClusterState, workload: WorkloadInfo, cq: ClusterQueueInfo) -> bool:
    """Whether the workload would borrow in the first flavor of its resource group: Kueue
    orders the queues' heads in a cycle with those within nominal quota first. An estimate
    for ordering only (the decision itself tries every flavor)."""
    if cq.cohort is None or workload.spec_error or not workload.pod_sets:
        return False
    need = _total(workload.pod_sets)
    group = _group_for(cq, need)
    if group is None or not group.flavors:
        return False
    tree = state.quota_tree()
    flavor = group.flavors[0].flavor
    return any(
        tree.borrowing_with(("cq", cq.name), (flavor, r), need[r])
        for r in group.covered
        if need.get(r)
    )


def requested_quota(
    state: ClusterState, workload: WorkloadInfo, cq: ClusterQueueInfo
) -> dict[tuple[str, str], int]:
    """What the workload would take of the queue's quota, per (flavor, resource): in the first
    flavor of its resource group whose quota fits it now, else the first (Kueue orders by
    the flavor assignment; an estimate for ordering only, as borrows_first)."""
    if workload.spec_error or not workload.pod_sets:
        return {}
    need = _total(workload.pod_sets)
    group = _group_for(cq, need)
    if group is None or not group.flavors:
        return {}
    tree = state.quota_tree()
    wanted = [r for r in sorted(group.covered) if need.get(r)]
    chosen = group.flavors[0].flavor
    if len(group.flavors) > 1:
        chosen = next(
            (
                fq.flavor
                for fq in group.flavors
                if all(need[r] <= tree.available(cq.name, (fq.flavor, r)) for r in wanted)
            ),
            chosen,
        )
    return {(chosen, r): need[r] for r in wanted}


def queue_order_key(workload: WorkloadInfo) -> tuple[int, datetime, str]:
    """Kueue's queue order: higher priority first, then older first."""
    return (-workload.priority, workload.created, workload.name)


def pending_order(workloads: list[WorkloadInfo]) -> list[WorkloadInfo]:
    """The workloads in Kueue's queue order (queue_order_key)."""
    return sorted(workloads, key=queue_order_key)


def topology_flavors_within_quota(
    state: ClusterState, workload: WorkloadInfo, cq: ClusterQueueInfo
) -> list[str]:
    """The TAS flavors of the workload's resource group whose quota fits it now, in order:
    where only the topology keeps it out (defragmentation plans there, admission/moves.py)."""
    if workload.spec_error or not workload.pod_sets:
        return []
    need = _total(workload.pod_sets)
    group = _group_for(cq, need)
    if group is None:
        return []
    tree = state.quota_tree()
    return [
        fq.flavor
        for fq in group.flavors
        if state.flavors[fq.flavor].topology_name
        and _quota_fit(tree, cq, fq, group.covered, need).message is None
    ]
