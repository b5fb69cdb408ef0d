"""Quota in a tree of cohorts, counted as Kueue counts it (hierarchical cohorts).

A ClusterQueue owns its nominal quota. A cohort pools what its members lend: all of a member's
quota unless the member sets a `lendingLimit`, which keeps the rest for the member alone. A
Cohort object may add quota of its own and have a parent cohort, to which it lends in turn.
A member borrows from its cohort's pool up to its `borrowingLimit` (no limit when absent).

Per (flavor, resource), for a node (ClusterQueue or cohort):
- subtree quota: a ClusterQueue's nominal; a cohort's own nominal plus what each child lends;
- local (kept) quota: subtree minus lendingLimit, when a lendingLimit is set; else 0;
- usage: a ClusterQueue's admitted requests; a cohort's, what its children use beyond their
  local quota;
- available to a ClusterQueue: its unused local quota, plus what its parent has available,
  within its borrowingLimit.

Pure: built from the ClusterQueues, the Cohort objects and each queue's usage. `shift` moves
one queue's usage (a preemption simulation); everything is recomputed from the raw usage.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from tas.cache.projections import ClusterQueueInfo, CohortInfo, ResourceGroup

FlavorResource = tuple[str, str]  # (flavor, resource)
Node = tuple[str, str]  # ("cq", name) or ("cohort", name)


@dataclass(frozen=True)
class Quota:
    nominal: int = 0
    borrowing_limit: int | None = None
    lending_limit: int | None = None


def quotas_of(groups: tuple[ResourceGroup, ...]) -> dict[FlavorResource, Quota]:
    out = {}
    for group in groups:
        for fq in group.flavors:
            for resource in group.covered:
                out[(fq.flavor, resource)] = Quota(
                    fq.nominal.get(resource, 0),
                    fq.borrowing_limit.get(resource),
                    fq.lending_limit.get(resource),
                )
    return out


class QuotaTree:
    def __init__(
        self,
        cluster_queues: Mapping[str, ClusterQueueInfo],
        cohorts: Mapping[str, CohortInfo],
        usage: Callable[[str, str], Mapping[str, int]],  # (cq, flavor) -> resource -> milli
    ) -> None:
        self._cqs = cluster_queues
        self._cohorts = cohorts
        self._usage = usage
        self._shifts: dict[tuple[str, FlavorResource], int] = defaultdict(int)
        self._quotas: dict[Node, dict[FlavorResource, Quota]] = {}
        self._flavor_resources: dict[Node, set[FlavorResource]] = {}
        # Derived from the quotas alone (not the usage): kept while the tree lives.
        self.memo: dict[object, object] = {}
        self._children: dict[str, list[Node]] = defaultdict(list)
        for cq in cluster_queues.values():
            if cq.cohort:
                self._children[cq.cohort].append(("cq", cq.name))
        for cohort in cohorts.values():
            if cohort.parent:
                self._children[cohort.parent].append(("cohort", cohort.name))
        self._cyclic = {name for name in self._named_cohorts() if self._on_cycle(name)}

    # ---- the tree ---------------------------------------------------------------------------

    def _named_cohorts(self) -> set[str]:
        return set(self._children) | set(self._cohorts)

    def _on_cycle(self, name: str | None) -> bool:
        seen = set()
        while name is not None:
            if name in seen:
                return True
            seen.add(name)
            cohort = self._cohorts.get(name)
            name = cohort.parent if cohort else None
        return False

    def has_cycle(self, cq: str) -> bool:
        """Its cohort chain loops (Kueue then leaves the ClusterQueue inactive)."""
        info = self._cqs.get(cq)
        return bool(info and info.cohort and info.cohort in self._cyclic)

    def parent(self, node: Node) -> Node | None:
        kind, name = node
        if kind == "cq":
            cq_info = self._cqs.get(name)
            cohort = cq_info.cohort if cq_info else None
        else:
            cohort_info = self._cohorts.get(name)
            cohort = cohort_info.parent if cohort_info else None
        if not cohort or cohort in self._cyclic:
            return None
        return ("cohort", cohort)

    def path_to_root(self, node: Node) -> Iterator[Node]:
        """The node's ancestors, its parent first."""
        parent = self.parent(node)
        while parent is not None:
            yield parent
            parent = self.parent(parent)

    def path(self, cq: str) -> str:
        """Kueue's queue path in messages: "/root-cohort/.../cohort/queue"."""
        names = [name for _, name in self.path_to_root(("cq", cq))]
        return "/" + "/".join([*reversed(names), cq])

    def children(self, cohort: str) -> list[Node]:
        return self._children.get(cohort, [])

    def cohorts(self) -> list[str]:
        """Every cohort named by a ClusterQueue, a Cohort object or a parent, except those
        whose chain of parents loops (Kueue leaves them out of its tree)."""
        return sorted(self._named_cohorts() - self._cyclic)

    def descendants(self, cohort: str) -> Iterator[Node]:
        """Every ClusterQueue and cohort below an acyclic cohort, at any depth."""
        for child in self.children(cohort):
            yield child
            if child[0] == "cohort":
                yield from self.descendants(child[1])

    def fair_weight(self, node: Node) -> float:
        """spec.fairSharing.weight of a ClusterQueue or Cohort object; 1 for a cohort only
        named (no object)."""
        kind, name = node
        info = self._cqs.get(name) if kind == "cq" else self._cohorts.get(name)
        return info.fair_weight if info else 1.0

    def flavor_resources(self, node: Node) -> set[FlavorResource]:
        """The (flavor, resource) pairs with quota in the node's subtree, 0 included (the keys
        of Kueue's SubtreeQuota)."""
        out = self._flavor_resources.get(node)
        if out is None:
            out = set(self._quota_map(node))
            if node[0] == "cohort":
                for child in self.children(node[1]):
                    out |= self.flavor_resources(child)
            self._flavor_resources[node] = out
        return out

    # ---- quantities -------------------------------------------------------------------------

    def _quota_map(self, node: Node) -> dict[FlavorResource, Quota]:
        quotas = self._quotas.get(node)
        if quotas is None:
            kind, name = node
            info = self._cqs.get(name) if kind == "cq" else self._cohorts.get(name)
            quotas = quotas_of(info.resource_groups) if info else {}
            self._quotas[node] = quotas
        return quotas

    def quota(self, node: Node, fr: FlavorResource) -> Quota:
        return self._quota_map(node).get(fr, Quota())

    def subtree(self, node: Node, fr: FlavorResource) -> int:
        own = self.quota(node, fr).nominal
        if node[0] == "cq":
            return own
        key = ("subtree", node, fr)  # quotas only: kept while the tree lives
        kept = self.memo.get(key)
        if kept is None:
            kept = own + sum(
                self.subtree(child, fr) - self.local(child, fr) for child in self.children(node[1])
            )
            self.memo[key] = kept
        return kept  # type: ignore[return-value]

    def local(self, node: Node, fr: FlavorResource) -> int:
        lending = self.quota(node, fr).lending_limit
        return 0 if lending is None else max(0, self.subtree(node, fr) - lending)

    def usage(self, node: Node, fr: FlavorResource) -> int:
        kind, name = node
        if kind == "cq":
            return self._usage(name, fr[0]).get(fr[1], 0) + self._shifts[(name, fr)]
        return sum(
            max(0, self.usage(child, fr) - self.local(child, fr)) for child in self.children(name)
        )

    def shift(self, cq: str, fr: FlavorResource, delta: int) -> None:
        self._shifts[(cq, fr)] += delta

    def local_available(self, node: Node, fr: FlavorResource) -> int:
        return max(0, self.local(node, fr) - self.usage(node, fr))

    def _available(self, node: Node, fr: FlavorResource) -> int:
        parent = self.parent(node)
        if parent is None:
            return self.subtree(node, fr) - self.usage(node, fr)
        from_parent = self._available(parent, fr)
        limit = self.quota(node, fr).borrowing_limit
        if limit is not None:
            local = self.local(node, fr)
            stored = self.subtree(node, fr) - local
            used = max(0, self.usage(node, fr) - local)
            from_parent = min(stored - used + limit, from_parent)
        return self.local_available(node, fr) + from_parent

    def available(self, cq: str, fr: FlavorResource) -> int:
        """What the ClusterQueue can admit now, borrowing included (0 when in debt)."""
        return max(0, self._available(("cq", cq), fr))

    def potential(self, cq: str, fr: FlavorResource) -> int:
        """The most it could ever admit: its quota and all it could borrow."""
        return self._potential(("cq", cq), fr)

    def potential_available(self, node: Node, fr: FlavorResource) -> int:
        """Kueue's potentialAvailable: the most any node could use, with no usage anywhere."""
        return self._potential(node, fr)

    def _potential(self, node: Node, fr: FlavorResource) -> int:
        parent = self.parent(node)
        if parent is None:
            return self.subtree(node, fr)
        out = self.local(node, fr) + self._potential(parent, fr)
        limit = self.quota(node, fr).borrowing_limit
        if limit is not None:
            out = min(self.subtree(node, fr) + limit, out)
        return out

    def borrowing_with(self, node: Node, fr: FlavorResource, value: int = 0) -> bool:
        """Using `value` more would take the node beyond its own quota."""
        limit = self.quota(node, fr).nominal if node[0] == "cq" else self.subtree(node, fr)
        return self.usage(node, fr) + value > limit

    def within_nominal(self, node: Node, frs) -> bool:
        return not any(self.borrowing_with(node, fr) for fr in frs)

    def borrowed(self, cq: str, fr: FlavorResource) -> int:
        """What it uses beyond its nominal quota (status flavorsUsage.borrowed)."""
        return max(0, self.usage(("cq", cq), fr) - self.quota(("cq", cq), fr).nominal)

    def lowest_subtree_that_fits(self, cq: str, fr: FlavorResource, value: int) -> bool:
        """Kueue's mayReclaimInHierarchy: the request fits the quota of some subtree on the
        way up that is not the root (so reclaiming from the rest could make room)."""
        node: Node = ("cq", cq)
        if not self.borrowing_with(node, fr, value) or self.parent(node) is None:
            return self.parent(node) is not None
        remaining = value - self.local_available(node, fr)
        for ancestor in self.path_to_root(node):
            if not self.borrowing_with(ancestor, fr, remaining):
                return self.parent(ancestor) is not None
            remaining -= self.local_available(ancestor, fr)
        return False

    def fits_in(self, node: Node, requests: Mapping[FlavorResource, int]):
        """Kueue's QuantitiesFitInQuota: do the requests fit the node's subtree quota, and what
        remains of them beyond its local available quota."""
        fits = True
        remaining = {}
        for fr, value in requests.items():
            if self.usage(node, fr) + value > self.subtree(node, fr):
                fits = False
            remaining[fr] = max(0, value - self.local_available(node, fr))
        return fits, remaining
