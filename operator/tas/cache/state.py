"""The cluster as admission sees it, updated from watch events, handing out solver snapshots.

All methods are synchronous and called from the event loop only, so no locks are needed: a
mutation never awaits half-way (see the style anchors, "async only"). Once bound to the loop's
thread, every mutation checks that it runs there: a handler run in a thread pool fails loudly
instead of corrupting usage.

Capacity bookkeeping:
- `generation` changes whenever capacity changes for reasons other than our own admissions
  (nodes, pods outside TAS, topologies, flavors, queues, a workload releasing its quota), so the
  admission loop retries a workload that did not fit only when something could have changed.
- `retry_marker(cq)` narrows that to what can change the answer for a workload of `cq`, as
  Kueue requeues its inadmissible workloads: a change to every queue (topologies, flavors,
  queues, cohorts, namespaces, placement groups), quota released in the queue's cohort tree,
  or the capacity of a node of one of the queue's flavors (its pods, or a charge released on
  it). Another cohort's usage, or nodes of another flavor, leave it as it was.
- Each workload holding quota has a `Charge`: its quota usage per ClusterQueue and flavor, and
  its topology usage per flavor. Charges come from the watched status, or from `assume()` for an
  admission whose status write is in flight; `forget()` rolls an assumption back.
- Every pod bound to a node and not finished takes capacity on that node ("non-TAS usage"),
  unless a charge already covers it. A charge covers a pod only by our own records: the pod is
  the workload's (the pod's controlling owner is one of the workload's owners, or so is an
  owner up its chain as recorded by `link_owner` - a JobSet's Jobs, a TrainJob's JobSet's
  Jobs -, or the pod itself is an owner - plain pods and pod groups), and the charge's topology assignment has a free slot for
  the pod's pod set in the domain of the pod's node. Labels and annotations a user can set
  never hide a pod; pods beyond the assigned count, or outside it, count. A covered pod that
  asks for more than its slot (an in-place resize) counts on its node for the difference.
- A NUMA zone annotation counts only on a covered pod (see numa.py).
- An exclusive placement group's hold (the rest of the whole domains it holds, see
  exclusive.py) counts in its ClusterQueue's quota usage.
- Topology snapshots are built per flavor on demand and kept: a charge is added to or removed
  from a cached snapshot incrementally; a capacity change of any other kind drops them.
- A node can belong to several flavors (their nodeLabels overlap). With `overlapping_flavors`
  (Kueue's TASHandleOverlappingFlavors) a charge placed on nodes (a hostname-level assignment)
  counts in the snapshot of every flavor whose topology ends at hostname, so no node is handed
  out twice; without it, only in its own flavor's snapshot, as Kueue before v0.18.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from tas.api.constants import (
    REASON_COHORT_CYCLE,
    REASON_FLAVOR_NOT_FOUND,
    REASON_TOPOLOGY_NOT_FOUND,
)
from tas.api.fairsharing import FairSharing
from tas.api.movable import Movable
from tas.api.numazones import parse_numa_zones
from tas.api.placementgroups import GroupSpec
from tas.cache.charges import Charge, PodSetCharge, charge_of
from tas.cache.exclusive import Hold, exclusive_hold
from tas.cache.numa import NumaLedger, Pending
from tas.cache.projections import (
    ClusterQueueInfo,
    CohortInfo,
    ContainerDefaults,
    FlavorInfo,
    Key,
    PlacementGroupInfo,
    PodDefaults,
    PodInfo,
    PodPriorityClass,
    WorkloadInfo,
    selects_namespace,
)
from tas.cache.quota import QuotaTree
from tas.solver import TopologySnapshot
from tas.solver.placement import leader_first
from tas.solver.types import (
    HOSTNAME_LEVEL,
    FlavorSpec,
    Node,
    NodeNuma,
    NumaShape,
    SolverOptions,
    with_one_pod,
)

# How far up its recorded owners a pod is followed to its workload's owner: a TrainJob's pods
# are three links below it (TrainJob -> JobSet -> Job -> pod).
MAX_OWNER_DEPTH = 4

log = logging.getLogger(__name__)


class WrongThread(RuntimeError):
    """The cache was about to be changed off the event loop's thread."""


class ClusterState:
    def __init__(
        self, options: SolverOptions | None = None, *, overlapping_flavors: bool = True
    ) -> None:
        self._owner: int | None = None  # the thread allowed to mutate, once bound
        self.options = options or SolverOptions()
        self.overlapping_flavors = overlapping_flavors  # TASHandleOverlappingFlavors
        # Kueue's fairSharing configuration; None: off (classical order and preemption).
        self.fair_sharing: FairSharing | None = None
        self.generation = 0
        self.nodes: dict[str, Node] = {}
        self.pods: dict[Key, PodInfo] = {}
        self.topologies: dict[str, tuple[str, ...]] = {}
        self.flavors: dict[str, FlavorInfo] = {}
        self.cluster_queues: dict[str, ClusterQueueInfo] = {}
        self.cohorts: dict[str, CohortInfo] = {}  # Cohort objects; a named cohort needs none
        self._quota_tree: QuotaTree | None = None  # rebuilt when queues or cohorts change
        self.local_queues: dict[Key, str] = {}  # (namespace, name) -> ClusterQueue
        # (namespace, name) -> its workloads' default tas-operator.io/movable annotations
        self.local_queue_movable: dict[Key, Movable] = {}
        self.namespaces: dict[str, Mapping[str, str]] = {}  # name -> labels
        self.workloads: dict[Key, WorkloadInfo] = {}
        self.workload_by_owner: dict[str, Key] = {}  # controlling owner uid -> workload
        # Owners of owners, from our own watches: a JobSet's Job uid -> the JobSet's uid.
        # Followed up to MAX_OWNER_DEPTH links (see owner_chain).
        self.parents: dict[str, str] = {}
        # Indexes kept on every change (an admission cycle or a node check costs what changed):
        # waiting workloads, ones with a node to replace, and those holding capacity per node.
        self.pending: set[Key] = set()
        self.to_replace: set[Key] = set()
        # spec.active changed: workloads to evict (deactivated) and to requeue (reactivated)
        self.to_deactivate: set[Key] = set()
        self.to_reactivate: set[Key] = set()
        self._by_node: dict[str, set[Key]] = defaultdict(set)
        self._non_tas_usage: dict[str, dict[str, int]] = defaultdict(dict)  # pods outside TAS
        self._pods_by_workload: dict[Key, set[Key]] = defaultdict(set)
        self._pod_usage: dict[Key, tuple[str, dict[str, int]]] = {}  # pod -> (node, usage)
        self._coverage: dict[Key, _Coverage] = {}  # workload -> the pods its charge covers
        # Pods a charge may cover, bound to a node not listed yet (kinds are listed at once).
        self._before_node: dict[str, set[Key]] = defaultdict(set)
        self._assumed: dict[Key, Charge] = {}
        self._assumed_on: dict[Key, str] = {}  # the resourceVersion each assumption was made on
        self._charges: dict[Key, Charge] = {}
        self._charged_at: dict[Key, int] = {}  # admission order, NUMA zones' packing order
        self._charge_count = itertools.count()
        self._quota_usage: dict[str, dict[str, dict[str, int]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        self._snapshots: dict[str, TopologySnapshot] = {}
        self.numa = NumaLedger()  # NUMA zones of the nodes that report them (TASNUMAZones)
        self._init_workload_building()
        self._init_placement_groups()
        self._init_retry_generations()
        # Called (no argument, on the loop) after nodes, pods' usage, workloads or groups
        # change: the topology view rebuilds shortly after. Must be cheap and never raise.
        self.listeners: list[Callable[[], None]] = []
        # Called with the version held (None: new) and the one taken, on every Workload taken.
        self.workload_listeners: list[Callable[[WorkloadInfo | None, WorkloadInfo], None]] = []

    def _init_placement_groups(self) -> None:
        """Placement groups (ours): the objects, members, partitions of admissions being written."""
        self.placement_groups: dict[Key, PlacementGroupInfo] = {}
        self.group_members: dict[Key, set[Key]] = defaultdict(set)
        self.placement_groups_deleted: set[Key] = set()  # for the loop to write them again
        # Exclusive groups' holds beyond their members' requests, per (ClusterQueue, flavor):
        # computed when quota is read, dropped when charges, nodes or groups change.
        self._holds: dict[tuple[str, str], dict[str, int]] | None = None
        self.assumed_partitions: dict[Key, dict[Key, dict[tuple[str, ...], int]]] = defaultdict(
            dict
        )

    def _init_retry_generations(self) -> None:
        """Counters of the changes that can let a waiting workload in (see retry_marker): each
        one also counts in `generation`, which keys the markers' cache."""
        self._every_queue_generation = 0
        self._tree_generations: dict[tuple[str, str], int] = defaultdict(int)  # by tree root
        self._flavor_generations: dict[str, int] = defaultdict(int)
        self._retry_markers: dict[str, tuple] = {}
        self._retry_markers_at = -1  # the generation they were made at

    def _init_workload_building(self) -> None:
        """What is read when a Workload is built, never by admission itself: its priority, and
        LimitRanges per namespace by name and RuntimeClass overheads for its requests."""
        self.workload_priority_classes: dict[str, int] = {}
        self.pod_priority_classes: dict[str, PodPriorityClass] = {}
        self.limit_ranges: dict[str, dict[str, ContainerDefaults]] = {}
        self.runtime_class_overheads: dict[str, Mapping[str, str]] = {}

    def bind_to_current_thread(self) -> None:
        self._owner = threading.get_ident()

    def _check_thread(self) -> None:
        if self._owner is not None and threading.get_ident() != self._owner:
            raise WrongThread(
                f"cache mutated from thread {threading.current_thread().name}, "
                "not the event loop's: handlers touching the cache must be async"
            )

    # ---- capacity changes that are not our own admissions -------------------------------------

    def _notify(self) -> None:
        for listener in self.listeners:
            listener()

    def _capacity_changed(self) -> None:
        """Topologies, flavors or queues changed: snapshots are rebuilt on next use."""
        self.generation += 1
        self._every_queue_generation += 1
        self._snapshots.clear()
        self._holds = None
        self._notify()

    def _node_changed(self, name: str, before: Node | None = None) -> None:
        """One node's capacity changed (`before`: as it was, if its labels may have changed):
        update the cached snapshots in place."""
        self.generation += 1
        self._notify()
        node = self.nodes.get(name)
        self._count_node_change(node, before)
        for snapshot in self._snapshots.values():
            if node is None:
                snapshot.remove_node(name)
            else:
                snapshot.upsert_node(self._with_usage(node))

    def upsert_numa_report(self, node: str, zones: NodeNuma | None) -> bool:
        """A node's NodeResourceTopology, read (None: gone, unreadable, or another policy:
        the node is counted by its totals)."""
        self._check_thread()
        if zones is None and node not in self.numa.reports:
            return False
        self.numa.report(node, zones, self.pods)
        return self._zones_changed({node})

    def _zones_changed(self, nodes: Iterable[str]) -> bool:
        """Zones changed on these nodes: the snapshots see them (capacity may have come)."""
        changed = False
        for name in nodes:
            if name in self.nodes:
                self._node_changed(name)
                changed = True
        return changed

    def numa_plans(self, node: str) -> dict[tuple[Key, str], list[tuple[str, ...]]]:
        """The zones the not yet pinned pods of admitted workloads on a node are counted in,
        per (workload, pod set), in pin order: what the ungater writes on them."""
        result = self.numa.free(node, self.pods, self._numa_pending(node))
        return result[1] if result else {}

    def _numa_pending(self, node: str) -> list[Pending]:
        zoned: dict[tuple[Key, str], int] = defaultdict(int)
        for key in self.numa.zoned.get(node, ()):
            pod = self.pods.get(key)
            if pod is not None and pod.workload:
                zoned[((pod.namespace, pod.workload), pod.pod_set or "")] += 1
        out = []
        # in admission order, as `tas simulate` takes their zones
        holding = self._by_node.get(node, ())
        for key in sorted(holding, key=lambda k: (self._charged_at.get(k, -1), k)):
            workload = self.workloads.get(key)
            charge = self._charges.get(key)
            if workload is None or charge is None:
                continue
            shapes = {ps.name: ps.numa for ps in workload.pod_sets}
            order = {ps.name: i for i, ps in enumerate(leader_first(workload.pod_sets))}
            for ps in sorted(charge.pod_sets, key=lambda p: order.get(p.name, len(order))):
                shape = shapes.get(ps.name)
                if shape is None or ps.assignment is None:
                    continue
                on_node = sum(d.count for d in ps.assignment.domains if d.values[-1:] == (node,))
                left = on_node - zoned.get((key, ps.name), 0)
                if left > 0:
                    pinned = self._pinned_unbound(key, workload.owner_uids, ps.name, node, shape)
                    out.append(Pending((key, ps.name), shape, left, tuple(pinned[:left])))
        return out

    def _pinned_unbound(
        self, workload: Key, owners: frozenset[str], pod_set: str, node: str, shape: NumaShape
    ) -> list[tuple[str, ...]]:
        """The zones our ungater gave a workload's pods on their way to `node` (ungated onto
        it, not bound yet): their workload keeps those zones for them. Pods ours by our
        records only, as for coverage."""
        out = []
        for key in sorted(self._pods_by_workload.get(workload, ())):
            pod = self.pods.get(key)
            if (
                pod is None
                or pod.node_name
                or pod.gated
                or pod.terminal
                or pod.pod_set != pod_set
                or pod.node_selector.get(HOSTNAME_LEVEL) != node
                or not self._belongs(pod, owners)
            ):
                continue
            zones = parse_numa_zones(pod.numa_zone, shape)
            if any(zones):
                out.append(zones)
        return out

    def upsert_node(self, node: Node) -> bool:
        self._check_thread()
        before = self.nodes.get(node.name)
        if before == node:
            return False  # a heartbeat: nothing placement reads has changed
        self.nodes[node.name] = node
        self._node_changed(node.name, before)
        self._holds = None  # a held domain's capacity may have changed
        for key in self._before_node.pop(node.name, ()):
            pod = self.pods.get(key)
            if pod is not None and pod.node_name == node.name:
                self._account_pod(pod, pod)  # its charge may cover it now
        return True

    def delete_node(self, name: str) -> bool:
        self._check_thread()
        before = self.nodes.pop(name, None)
        if before is None:
            return False
        self._node_changed(name, before)
        self._holds = None
        return True

    def upsert_pod(self, pod: PodInfo) -> bool:
        """Returns True when non-TAS usage changed (capacity for placement)."""
        self._check_thread()
        key = (pod.namespace, pod.name)
        old = self.pods.get(key)
        if old == pod:
            return False
        self.pods[key] = pod
        self._index_pod(old, pod)
        return self._account_pod(old, pod)

    def delete_pod(self, namespace: str, name: str) -> bool:
        self._check_thread()
        old = self.pods.pop((namespace, name), None)
        if old is None:
            return False
        self._index_pod(old, None)
        return self._account_pod(old, None)

    def _index_pod(self, old: PodInfo | None, new: PodInfo | None) -> None:
        if old and old.workload:
            workload = (old.namespace, old.workload)
            self._pods_by_workload[workload].discard((old.namespace, old.name))
            if not self._pods_by_workload[workload]:
                del self._pods_by_workload[workload]  # nothing is kept for what is gone
        if old and old.node_name in self._before_node:
            waiting = self._before_node[old.node_name]
            waiting.discard((old.namespace, old.name))
            if not waiting:
                del self._before_node[old.node_name]
        if new and new.workload:
            self._pods_by_workload[(new.namespace, new.workload)].add((new.namespace, new.name))

    def _account_pod(self, old: PodInfo | None, new: PodInfo | None) -> bool:
        """Move a pod's slot in its workload's coverage, then its usage on its node and its
        NUMA zone."""
        pod = new or old
        assert pod is not None
        key = (pod.namespace, pod.name)
        freed = None
        if old and old.workload:
            cov = self._coverage.get((old.namespace, old.workload))
            if cov is not None:
                freed = cov.release(key)
                cov.waiting.discard(key)
        covering = None
        if new and new.workload:
            cov = self._coverage.get((new.namespace, new.workload))
            if cov is not None and cov.take(key, self._slot_of(new, cov)):
                covering = cov
        changed = self._settle(key, new, covering)
        if freed is not None and old and old.workload:
            changed |= self._refill((old.namespace, old.workload), freed)
        return changed

    def _slot_of(self, pod: PodInfo, cov: _Coverage) -> tuple | None:
        """The assignment slot this pod would fill, or None if the charge cannot cover it."""
        if not pod.holds_node or not self._belongs(pod, cov.owner_uids):
            return None
        levels = cov.levels.get(pod.pod_set or "")
        node = self.nodes.get(pod.node_name or "")
        if levels is None:
            return None
        if node is None:
            self._before_node[pod.node_name or ""].add((pod.namespace, pod.name))
            return None
        return (pod.pod_set, tuple(node.labels.get(level, "") for level in levels))

    def _belongs(self, pod: PodInfo, owners: frozenset[str]) -> bool:
        """The pod is the workload's by our records: its controller, or an owner up its chain
        of recorded owners (a TrainJob's JobSet's Job), is an owner of the workload, or the
        workload is owned by the pod."""
        return pod.uid in owners or any(uid in owners for uid in self.owner_chain(pod.owner_uid))

    def owner_chain(self, uid: str | None) -> list[str]:
        """`uid`, then its recorded owner, that one's, ...: at most MAX_OWNER_DEPTH, and never
        round a cycle (only our own watches record links, but a loop must not hang us)."""
        chain: list[str] = []
        while uid is not None and uid not in chain and len(chain) < MAX_OWNER_DEPTH:
            chain.append(uid)
            uid = self.parents.get(uid)
        return chain

    def link_owner(self, child: str, parent: str | None) -> None:
        """Record (or with None forget) that `parent` controls `child` (a JobSet its Job), so
        that the pods of `child` are the workload's of its owner chain; the coverage of the
        workloads up the old and the new chain is rebuilt."""
        self._check_thread()
        old = self.parents.get(child)
        if old == parent:
            return
        before = self.owner_chain(old)
        if parent is None:
            del self.parents[child]
        else:
            self.parents[child] = parent
        for uid in {*before, *self.owner_chain(parent)}:
            key = self.workload_by_owner.get(uid)
            if key is not None and key in self._charges:
                self._cover(key)

    def _settle(self, key: Key, pod: PodInfo | None, covering: _Coverage | None) -> bool:
        """A pod's usage on its node and its NUMA zone, given the coverage holding a slot for
        it (None: none does). Only a pod a charge covers is counted in the zone its annotation
        names: bound, and ours by our records, so the annotation is the one our ungater wrote.
        Any other pod's zone annotation is its owner's to write and counts for nothing (the
        pod counts in its node's totals). True if the node's capacity changed."""
        slot = covering.covered.get(key) if covering is not None else None
        slot_requests = covering.requests.get(slot[0]) if covering and slot else None
        changed = self._set_pod_usage(key, pod, slot_requests)
        zone_node = pod.node_name if pod and pod.numa_zone and slot is not None else None
        return self._zones_changed(self.numa.pin(key, pod, zone_node)) or changed

    def _set_pod_usage(
        self, key: Key, pod: PodInfo | None, slot_requests: Mapping[str, int] | None
    ) -> bool:
        """The usage this pod adds to its node: all it requests if bound, unfinished and
        uncovered; if covered, what it requests beyond the requests of its slot, which its
        charge holds (a LimitRange default, a RuntimeClass overhead or an in-place resize the
        Workload did not ask for); nothing if unbound or finished. True if that changed."""
        after: tuple[str, dict[str, int]] | None = None
        if pod and pod.node_name and pod.holds_node:
            usage = (
                with_one_pod(pod.requests)
                if slot_requests is None
                else _beyond(pod.requests, slot_requests)
            )
            after = (pod.node_name, usage) if usage else None
        before = self._pod_usage.get(key)
        if before == after:
            return False
        for held, sign in ((before, -1), (after, 1)):
            if held:
                node_usage = self._non_tas_usage[held[0]]
                for resource, value in held[1].items():
                    node_usage[resource] = node_usage.get(resource, 0) + sign * value
                if not any(node_usage.values()):  # any node name a pod named: keep none empty
                    del self._non_tas_usage[held[0]]
        if after is None:
            del self._pod_usage[key]
        else:
            self._pod_usage[key] = after
        for name in {u[0] for u in (before, after) if u}:
            if name in self.nodes:
                self._node_changed(name)
        return True

    def _refill(self, workload: Key, slot: tuple) -> bool:
        """A covered pod left its slot: a pod of the workload waiting for one takes it."""
        cov = self._coverage.get(workload)
        if cov is None:
            return False
        changed = False
        for key in sorted(cov.waiting):
            pod = self.pods.get(key)
            if pod is not None and self._slot_of(pod, cov) == slot and cov.take(key, slot):
                changed |= self._settle(key, pod, cov)
                break
        return changed

    def _cover(self, workload: Key) -> None:
        """Rebuild which pods a workload's charge covers: its charge or owner changed."""
        old = self._coverage.pop(workload, None)
        charge = self._charges.get(workload)
        info = self.workloads.get(workload)
        if charge is not None and info is not None and info.owner_uids:
            fresh = _Coverage.of(charge, info.owner_uids)
            if fresh.slots:
                self._coverage[workload] = fresh
        if old is None and workload not in self._coverage:
            return
        cov = self._coverage.get(workload)
        for key in sorted(self._pods_by_workload.get(workload, ())):
            pod = self.pods.get(key)
            if pod is None:
                continue
            covered = cov is not None and cov.take(key, self._slot_of(pod, cov))
            self._settle(key, pod, cov if covered else None)

    def upsert_topology(self, name: str, levels: Iterable[str]) -> None:
        self._check_thread()
        levels = tuple(levels)
        if self.topologies.get(name) != levels:
            self.topologies[name] = levels
            self._capacity_changed()

    def delete_topology(self, name: str) -> None:
        self._check_thread()
        if self.topologies.pop(name, None) is not None:
            self._capacity_changed()

    def upsert_flavor(self, flavor: FlavorInfo) -> None:
        self._check_thread()
        if self.flavors.get(flavor.name) != flavor:
            self.flavors[flavor.name] = flavor
            self._capacity_changed()

    def delete_flavor(self, name: str) -> None:
        self._check_thread()
        if self.flavors.pop(name, None) is not None:
            self._capacity_changed()

    def upsert_cluster_queue(self, cq: ClusterQueueInfo) -> bool:
        """Whether anything admission reads changed (not so for our own status writes)."""
        self._check_thread()
        if self.cluster_queues.get(cq.name) == cq:
            return False
        self.cluster_queues[cq.name] = cq
        self._quota_tree = None
        self._capacity_changed()
        return True

    def delete_cluster_queue(self, name: str) -> bool:
        self._check_thread()
        if self.cluster_queues.pop(name, None) is None:
            return False
        self._quota_tree = None
        self._capacity_changed()
        return True

    def upsert_cohort(self, cohort: CohortInfo) -> bool:
        """Whether anything admission reads changed (not so for our own status writes)."""
        self._check_thread()
        if self.cohorts.get(cohort.name) == cohort:
            return False
        self.cohorts[cohort.name] = cohort
        self._quota_tree = None
        self.generation += 1  # quota to lend changed; the topology did not
        self._every_queue_generation += 1
        return True

    def delete_cohort(self, name: str) -> bool:
        self._check_thread()
        if self.cohorts.pop(name, None) is None:
            return False
        self._quota_tree = None
        self.generation += 1
        self._every_queue_generation += 1
        return True

    def upsert_placement_group(self, group: PlacementGroupInfo) -> None:
        self._check_thread()
        key = (group.namespace, group.name)
        if self.placement_groups.get(key) != group:
            self.generation += 1  # decisions refused under the old object are tried again
            self._every_queue_generation += 1
            self._holds = None
            self._notify()
        self.placement_groups[key] = group
        # partitions now in the object no longer need the in-memory copy
        assumed = self.assumed_partitions.get(key)
        if assumed:
            for member in [
                m for m, domains in assumed.items() if domains.items() <= group.partitions.items()
            ]:
                del assumed[member]

    def delete_placement_group(self, namespace: str, name: str) -> None:
        self._check_thread()
        if self.placement_groups.pop((namespace, name), None) is not None:
            self.generation += 1
            self._every_queue_generation += 1
            self._holds = None
            self.placement_groups_deleted.add((namespace, name))
            self._notify()

    def quota_tree(self) -> QuotaTree:
        """ClusterQueues and cohorts with their current usage (read live from the charges)."""
        if self._quota_tree is None:
            self._quota_tree = QuotaTree(self.cluster_queues, self.cohorts, self.quota_usage)
        return self._quota_tree

    def upsert_local_queue(
        self, namespace: str, name: str, cluster_queue: str, movable: Movable | None = None
    ) -> bool:
        """Whether anything admission reads changed (not so for our own status writes)."""
        self._check_thread()
        key = (namespace, name)
        if movable is None:
            changed = self.local_queue_movable.pop(key, None) is not None
        else:
            changed = self.local_queue_movable.get(key) != movable
            self.local_queue_movable[key] = movable
        if self.local_queues.get(key) == cluster_queue and not changed:
            return False
        self.local_queues[key] = cluster_queue
        self._capacity_changed()
        return True

    def delete_local_queue(self, namespace: str, name: str) -> bool:
        self._check_thread()
        self.local_queue_movable.pop((namespace, name), None)
        if self.local_queues.pop((namespace, name), None) is None:
            return False
        self._capacity_changed()
        return True

    def upsert_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        self._check_thread()
        if self.namespaces.get(name) != labels:
            self.namespaces[name] = dict(labels)
            self._capacity_changed()

    def delete_namespace(self, name: str) -> None:
        self._check_thread()
        self.namespaces.pop(name, None)

    # ---- priority classes ---------------------------------------------------------------------

    def upsert_workload_priority_class(self, name: str, value: int | None) -> None:
        self._check_thread()
        if value is None:
            self.workload_priority_classes.pop(name, None)
        else:
            self.workload_priority_classes[name] = value

    def upsert_pod_priority_class(self, name: str, pc: PodPriorityClass | None) -> None:
        self._check_thread()
        if pc is None:
            self.pod_priority_classes.pop(name, None)
        else:
            self.pod_priority_classes[name] = pc

    def priority_classes(self) -> tuple[Mapping[str, int], Mapping[str, PodPriorityClass]]:
        return self.workload_priority_classes, self.pod_priority_classes

    # ---- what the API server adds to pods -------------------------------------------------------

    def upsert_limit_range(self, key: Key, defaults: ContainerDefaults | None) -> bool:
        """A LimitRange's container defaults (None: gone); True when they changed."""
        self._check_thread()
        namespace, name = key
        ranges = self.limit_ranges.get(namespace, {})
        if ranges.get(name) == defaults:
            return False
        if defaults is not None:
            self.limit_ranges[namespace] = {**ranges, name: defaults}
        elif name in ranges:
            del ranges[name]
            if not ranges:
                del self.limit_ranges[namespace]
        return True

    def upsert_runtime_class(self, name: str, overhead: Mapping[str, str] | None) -> bool:
        """A RuntimeClass's pod overhead (None: gone, or none); True when it changed."""
        self._check_thread()
        if self.runtime_class_overheads.get(name) == (overhead or None):
            return False
        if overhead:
            self.runtime_class_overheads[name] = overhead
        else:
            del self.runtime_class_overheads[name]
        return True

    def pod_defaults(self, namespace: str) -> PodDefaults:
        """What pods created in `namespace` get that their templates do not say: the
        LimitRanges' container defaults (the first LimitRange by name that sets a resource
        wins, as the LimitRanger applies them in list order) and the RuntimeClasses' overheads."""
        containers = ContainerDefaults()
        ranges = self.limit_ranges.get(namespace, {})
        for name in sorted(ranges):
            containers = containers.then(ranges[name])
        return PodDefaults(containers, dict(self.runtime_class_overheads))

    # ---- workloads and their charges -----------------------------------------------------------

    def upsert_workload(self, workload: WorkloadInfo) -> bool:
        """Take a version of a Workload; False (nothing changes) when it is older than the one
        held. The watch can lag behind a version read directly after a 409; going back to it
        would drop an assumption for a write that has landed and free its capacity twice."""
        self._check_thread()
        held = self.workloads.get(workload.key)
        if held is not None and held.uid == workload.uid and _older(workload, held):
            log.debug(
                "workload %s/%s: version %s is older than %s held; not taken",
                *workload.key,
                workload.resource_version,
                held.resource_version,
            )
            return False
        if held is not None and held.group_key != workload.group_key and held.group_key:
            self.group_members[held.group_key].discard(workload.key)
            self._holds = None
        if workload.group_key:
            self.group_members[workload.group_key].add(workload.key)
        self.workloads[workload.key] = workload
        _index(self.pending, workload.key, workload.pending)
        _index(self.to_replace, workload.key, bool(workload.nodes_to_replace))
        _index(self.to_deactivate, workload.key, workload.to_deactivate)
        _index(self.to_reactivate, workload.key, workload.to_reactivate)
        if workload.owner_uid:
            self.workload_by_owner[workload.owner_uid] = workload.key
        cov = self._coverage.get(workload.key)
        if cov is not None and cov.owner_uids != workload.owner_uids:
            self._coverage.pop(workload.key)  # rebuilt by the recharge below
        assumed_on = self._assumed_on.get(workload.key)
        if assumed_on is not None and assumed_on != workload.resource_version:
            # A version after the one the decision was made on: our write (guarded by that
            # version) has landed, or it cannot land any more (409) and is forgotten. Either
            # way the watched status charges what it holds from here on. Not only the exact
            # charge we wrote: a relist after an outage may show a later version.
            log.debug(
                "workload %s/%s: assumption on %s ends at %s (quota %s)",
                *workload.key,
                assumed_on,
                workload.resource_version,
                workload.has_quota,
            )
            self._drop_assumption(workload.key)
        self._recharge(workload.key)
        for listener in self.workload_listeners:
            listener(held, workload)
        self._notify()  # its status (a pending reason) may be all that changed
        return True

    def delete_workload(self, namespace: str, name: str) -> None:
        self._check_thread()
        old = self.workloads.pop((namespace, name), None)
        self.pending.discard((namespace, name))
        self.to_replace.discard((namespace, name))
        self.to_deactivate.discard((namespace, name))
        self.to_reactivate.discard((namespace, name))
        if old and old.owner_uid and self.workload_by_owner.get(old.owner_uid) == old.key:
            del self.workload_by_owner[old.owner_uid]
        if old and old.group_key:
            self.group_members[old.group_key].discard(old.key)
            self.assumed_partitions[old.group_key].pop(old.key, None)
            if not self.group_members[old.group_key]:
                del self.group_members[old.group_key]
            if not self.assumed_partitions[old.group_key]:
                del self.assumed_partitions[old.group_key]
        self._drop_assumption((namespace, name))
        self._recharge((namespace, name))
        self._notify()

    def assume(self, workload: WorkloadInfo, charge: Charge) -> None:
        """Take capacity for an admission before its status write lands. The write must be
        guarded by this version of the workload (its resourceVersion)."""
        self._check_thread()
        self._assumed[workload.key] = charge
        self._assumed_on[workload.key] = workload.resource_version
        self._recharge(workload.key)

    def forget(self, workload: WorkloadInfo) -> None:
        """Roll back the assumption made on this version of the workload, whose status write
        failed. An assumption made since, on a newer version, is another decision whose write
        is still on its way: a late answer to the old write must never end it."""
        self._check_thread()
        if self._assumed_on.get(
            workload.key
        ) == workload.resource_version and self._drop_assumption(workload.key):
            if workload.group_key:
                self.assumed_partitions[workload.group_key].pop(workload.key, None)
            self._recharge(workload.key)

    def _drop_assumption(self, key: Key) -> bool:
        self._assumed_on.pop(key, None)
        workload = self.workloads.get(key)
        if workload is not None and workload.group_key in self.assumed_partitions:
            # written to the group before the admission (or refused): the object holds them
            self.assumed_partitions[workload.group_key].pop(key, None)
        return self._assumed.pop(key, None) is not None

    def is_assumed(self, key: Key) -> bool:
        return key in self._assumed

    def assumed_on(self, key: Key) -> str | None:
        """The resourceVersion an assumption's decision was made on (None: no assumption)."""
        return self._assumed_on.get(key)

    def _recharge(self, key: Key) -> None:
        old = self._charges.get(key)
        workload = self.workloads.get(key)
        new = self._assumed.get(key) or (charge_of(workload) if workload else None)
        if old == new:
            if new is not None and key not in self._coverage:
                self._cover(key)
            return
        self._holds = None
        self._notify()
        if old:
            self._apply(old, -1)
            del self._charges[key]
            for node in _hosts(old):
                self._by_node[node].discard(key)
                if not self._by_node[node]:
                    del self._by_node[node]
            self.generation += 1  # released capacity may let waiting workloads in
            self._count_release(old)
        if new is None:
            self._charged_at.pop(key, None)
        else:
            self._charged_at.setdefault(key, next(self._charge_count))
            self._apply(new, 1)
            self._charges[key] = new
            for node in _hosts(new):
                self._by_node[node].add(key)
        self._cover(key)
        if self.numa.reports:
            moved = {h for c in (old, new) if c for h in _hosts(c) if h in self.numa.reports}
            for name in moved:  # their pending pods take or give back zones
                self._refresh_zones(name)

    def _refresh_zones(self, name: str) -> None:
        """A node's zones in the cached snapshots, without a capacity generation: our own
        admission took them."""
        node = self.nodes.get(name)
        if node is not None:
            for snapshot in self._snapshots.values():
                snapshot.upsert_node(self._with_usage(node))

    def _apply(self, charge: Charge, sign: int) -> None:
        usage = self._quota_usage[charge.cluster_queue]
        for ps in charge.pod_sets:
            flavor_usage = usage[ps.flavor]
            for resource, value in ps.per_pod.items():
                flavor_usage[resource] = flavor_usage.get(resource, 0) + sign * ps.count * value
            self.hold_in_snapshots(ps, sign)

    def hold_in_snapshots(self, ps: PodSetCharge, sign: int) -> None:
        """Add (1) or take back (-1) a pod set's topology usage in every cached snapshot it
        counts in, quota aside: for a charge, and for a placement still being computed."""
        if ps.assignment is None:
            return
        for name, snapshot in self._snapshots.items():
            if self._counts_in(ps, name, snapshot):
                snapshot.add_usage(ps.assignment, ps.requests, sign)

    def _counts_in(self, ps: PodSetCharge, flavor: str, snapshot: TopologySnapshot) -> bool:
        """Whether a pod set's (non-None) assignment takes capacity in a flavor's snapshot: its
        own flavor's always; another's when both place on nodes and TASHandleOverlappingFlavors
        shares node usage across flavors."""
        if ps.flavor == flavor:
            return True
        assert ps.assignment is not None
        return (
            self.overlapping_flavors
            and snapshot.hostname_lowest
            and ps.assignment.levels == (HOSTNAME_LEVEL,)
        )

    def counts_in(self, ps: PodSetCharge, flavor: str) -> bool:
        """Whether a pod set's topology usage takes capacity in the flavor's snapshot."""
        return ps.assignment is not None and self._counts_in(ps, flavor, self.snapshot(flavor))

    def quota_usage(self, cluster_queue: str, flavor: str) -> Mapping[str, int]:
        """What the queue's admitted workloads take in the flavor, with the whole domains its
        exclusive placement groups hold."""
        own = self._quota_usage[cluster_queue][flavor]
        held = self._group_holds().get((cluster_queue, flavor))
        if not held:
            return own
        return {r: own.get(r, 0) + held.get(r, 0) for r in {*own, *held}}

    def _group_holds(self) -> dict[tuple[str, str], dict[str, int]]:
        if self._holds is None:
            self._holds = {}
            for key in self.group_members if self.options.placement_groups else ():
                hold = self.exclusive_hold(key)
                if hold is None:
                    continue
                total = self._holds.setdefault((hold.cluster_queue, hold.flavor), {})
                for resource, value in hold.usage.items():
                    total[resource] = total.get(resource, 0) + value
        return self._holds

    def exclusive_hold(
        self, key: Key, spec: GroupSpec | None = None, joining: Charge | None = None
    ) -> Hold | None:
        """What an exclusive group holds beyond its members' requests (see cache/exclusive.py),
        under its constraints (`spec`, else its own), with a member `joining` if given."""
        charges = [
            self._charges[m] for m in sorted(self.group_members.get(key, ())) if m in self._charges
        ]
        if joining is not None:
            charges.append(joining)
        spec = spec or self.group_spec(key)
        return exclusive_hold(charges, spec, self.flavors, self.topologies, self.nodes)

    def group_spec(self, key: Key) -> GroupSpec | None:
        """A placement group's constraints: its object's, else those its members holding
        capacity were admitted with."""
        group = self.placement_groups.get(key)
        if group is not None:
            return group.spec
        holding = {m for m in self.group_members.get(key, ()) if m in self._charges}
        return self.annotated_group_spec(holding)

    def annotated_group_spec(self, members: Iterable[Key]) -> GroupSpec | None:
        """The constraints the first of these members (by name) gives in its annotations."""
        for member in sorted(members):
            workload = self.workloads.get(member)
            if workload is not None and workload.placement_group and workload.placement_group.spec:
                return workload.placement_group.spec
        return None

    def charges(self) -> Mapping[Key, Charge]:
        return self._charges

    # ---- queries -------------------------------------------------------------------------------

    def pods_of(self, namespace: str, workload: str) -> list[PodInfo]:
        keys = self._pods_by_workload.get((namespace, workload), ())
        return [self.pods[k] for k in keys if k in self.pods]

    def workloads_on_node(self, node: str) -> list[Key]:
        """Workloads holding quota whose topology assignment names this node."""
        return sorted(self._by_node.get(node, ()))

    def cluster_queue_of(self, workload: WorkloadInfo) -> str | None:
        return self.local_queues.get((workload.namespace, workload.queue_name))

    def namespace_allowed(self, cq: ClusterQueueInfo, namespace: str) -> bool:
        return selects_namespace(cq.namespace_selector, self.namespaces.get(namespace, {}))

    def cluster_queue_problem(self, cq: ClusterQueueInfo) -> tuple[str, str] | None:
        """Why a ClusterQueue cannot admit (reason, message), or None when it is active."""
        if self.quota_tree().has_cycle(cq.name):  # Kueue leaves it out of its snapshot
            return (
                REASON_COHORT_CYCLE,
                f"Can't admit new workloads: the parents of cohort {cq.cohort!r} form a cycle",
            )
        for group in cq.resource_groups:
            for fq in group.flavors:
                flavor = self.flavors.get(fq.flavor)
                if flavor is None:
                    return (
                        REASON_FLAVOR_NOT_FOUND,
                        f"Can't admit new workloads; references missing ResourceFlavor(s): {fq.flavor}",
                    )
                if flavor.topology_name and flavor.topology_name not in self.topologies:
                    return (
                        REASON_TOPOLOGY_NOT_FOUND,
                        f"Can't admit new workloads: references missing Topology {flavor.topology_name!r} "
                        f"(ResourceFlavor {flavor.name!r})",
                    )
        return None

    # ---- what can let a workload that did not fit in -----------------------------------------

    def retry_marker(self, cq: ClusterQueueInfo) -> tuple[object, ...]:
        """What a decision for a workload of `cq` read that a change can let it in by: changes to
        every queue, to the quota used in its cohort tree, to the capacity of its flavors. Equal
        markers before and after: no such change happened in between."""
        if self._retry_markers_at != self.generation:
            self._retry_markers.clear()
            self._retry_markers_at = self.generation
        marker = self._retry_markers.get(cq.name)
        if marker is None:
            root = self._tree_root(cq.name)
            flavors = sorted({fq.flavor for group in cq.resource_groups for fq in group.flavors})
            marker = (
                self._every_queue_generation,
                cq.name,
                root,
                self._tree_generations[root],
                tuple(self._flavor_generations[name] for name in flavors),
            )
            self._retry_markers[cq.name] = marker
        return marker

    def _tree_root(self, cq_name: str) -> tuple[str, str]:
        """The root of the queue's cohort tree: the queue itself when it has no cohort."""
        path = list(self.quota_tree().path_to_root(("cq", cq_name)))
        return path[-1] if path else ("cq", cq_name)

    def _count_release(self, charge: Charge) -> None:
        """A charge let go: its cohort tree's quota, its flavors and the flavors of its nodes
        (a node-level assignment counts in overlapping flavors too) have room again."""
        self._tree_generations[self._tree_root(charge.cluster_queue)] += 1
        for ps in charge.pod_sets:
            self._flavor_generations[ps.flavor] += 1
        self._count_node_change(*(self.nodes.get(name) for name in _hosts(charge)))

    def _count_node_change(self, *nodes: Node | None) -> None:
        """These nodes' capacity changed: the flavors that select any of them. An exclusive
        placement group's hold grows and shrinks with its domains' nodes, and counts in its
        queue's quota: while groups exist, every queue."""
        if self.placement_groups or self.group_members:
            self._every_queue_generation += 1
        for flavor in self.flavors.values():
            if any(node is not None and _selects(flavor, node) for node in nodes):
                self._flavor_generations[flavor.name] += 1

    def snapshot(self, flavor_name: str) -> TopologySnapshot:
        """The flavor's topology with every current usage, built once per capacity generation."""
        cached = self._snapshots.get(flavor_name)
        if cached is not None:
            return cached
        snapshot = self._build_snapshot(flavor_name, self.options)
        self._snapshots[flavor_name] = snapshot
        return snapshot

    def snapshot_with_draining(self, flavor_name: str) -> TopologySnapshot:
        """The flavor's snapshot as if no node were draining (TASDrainingDomains): built
        afresh, only to tell a workload that would fit there, so never cached."""
        return self._build_snapshot(flavor_name, replace(self.options, draining_domains=False))

    def _build_snapshot(self, flavor_name: str, options: SolverOptions) -> TopologySnapshot:
        flavor = self.flavors[flavor_name]
        levels = self.topologies[flavor.topology_name or ""]
        nodes = [self._with_usage(node) for node in self.nodes.values()]
        snapshot = TopologySnapshot(
            levels,
            nodes,
            FlavorSpec(
                node_labels=flavor.node_labels,
                tolerations=flavor.tolerations,
                topology_name=flavor.topology_name,
            ),
            options,
        )
        for charge in self._charges.values():
            for ps in charge.pod_sets:
                if ps.assignment is not None and self._counts_in(ps, flavor_name, snapshot):
                    snapshot.add_usage(ps.assignment, ps.requests)
        return snapshot

    def _with_usage(self, node: Node) -> Node:
        usage = self._non_tas_usage.get(node.name)
        zones = None
        if node.name in self.numa.reports:
            free = self.numa.free(node.name, self.pods, self._numa_pending(node.name))
            zones = free[0] if free else None
        if not usage and zones is None:
            return node
        return Node(
            name=node.name,
            labels=node.labels,
            allocatable=node.allocatable,
            usage=dict(usage or {}),
            taints=node.taints,
            ready=node.ready,
            unschedulable=node.unschedulable,
            numa=zones,
            draining=node.draining,
        )


def _older(new: WorkloadInfo, held: WorkloadInfo) -> bool:
    """resourceVersions are the store's revisions: integers that only grow for one object. One
    that is not an integer (another store) is never judged older."""
    try:
        return int(new.resource_version) < int(held.resource_version)
    except (TypeError, ValueError):
        return False


def _index(index: set[Key], key: Key, member: bool) -> None:
    if member:
        index.add(key)
    else:
        index.discard(key)


def _selects(flavor: FlavorInfo, node: Node) -> bool:
    """The node is one of the flavor's (its nodeLabels match; a superset of its snapshot's)."""
    return all(node.labels.get(key) == value for key, value in flavor.node_labels.items())


def _beyond(requests: Mapping[str, int], held: Mapping[str, int]) -> dict[str, int]:
    """What `requests` asks for beyond `held`, per resource."""
    return {r: v - held.get(r, 0) for r, v in requests.items() if v > held.get(r, 0)}


def _hosts(charge: Charge) -> set[str]:
    """The nodes a charge's hostname-level assignments name."""
    out: set[str] = set()
    for ps in charge.pod_sets:
        a = ps.assignment
        if a and a.levels[-1:] == (HOSTNAME_LEVEL,):
            out.update(d.values[-1] for d in a.domains)
    return out


@dataclass
class _Coverage:
    """The pods a workload's charge covers: one per slot of its topology assignment."""

    owner_uids: frozenset[str]
    levels: dict[str, tuple[str, ...]]  # pod set -> the assignment's levels
    requests: dict[str, Mapping[str, int]]  # pod set -> what the charge holds for each pod
    slots: dict[tuple, int]  # (pod set, domain values) -> free slots
    covered: dict[Key, tuple]  # pod -> the slot it holds
    waiting: set[Key]  # pods it could cover if a slot of theirs were free

    @classmethod
    def of(cls, charge: Charge, owner_uids: frozenset[str]) -> _Coverage:
        levels: dict[str, tuple[str, ...]] = {}
        requests: dict[str, Mapping[str, int]] = {}
        slots: dict[tuple, int] = defaultdict(int)
        for ps in charge.pod_sets:
            if ps.assignment is None:  # a flavor without topology: its pods count as usage
                continue
            levels[ps.name] = ps.assignment.levels
            requests[ps.name] = ps.requests
            for domain in ps.assignment.domains:
                slots[(ps.name, tuple(domain.values))] += domain.count
        return cls(owner_uids, levels, requests, dict(slots), {}, set())

    def take(self, pod: Key, slot: tuple | None) -> bool:
        if slot is None:
            return False
        if self.slots.get(slot, 0) <= 0:
            if slot in self.slots:
                self.waiting.add(pod)
            return False
        self.slots[slot] -= 1
        self.covered[pod] = slot
        self.waiting.discard(pod)
        return True

    def release(self, pod: Key) -> tuple | None:
        slot = self.covered.pop(pod, None)
        if slot is not None:
            self.slots[slot] += 1
        return slot
