"""The domain tree of one TAS flavor and its usage: every leaf's remaining capacity
(allocatable - non-TAS usage - admitted TAS usage) in one array, kept up to date incrementally
by `add_usage` and `upsert_node`, and which leaves a pod set may use (taints, node selector,
required affinity). Placement (placement.py) reads it; TopologySnapshot (snapshot.py) is both.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tas.solver import feasibility, groups, vectorized
from tas.solver.filters import (
    affinity_score,
    first_untolerated_taint,
    matches_node_selector,
    matches_required_affinity,
    scoring_terms,
    taint_string,
)
from tas.solver.numa_counting import NumaColumns
from tas.solver.tree import Domain, DomainTree
from tas.solver.types import (
    HOSTNAME_LEVEL,
    ONE_POD,
    PODS,
    DomainAssignment,
    FlavorSpec,
    Node,
    NodeSelectorTerm,
    PodSetRequest,
    PreferredSchedulingTerm,
    Resources,
    SolverOptions,
    Toleration,
    TopologyAssignment,
    with_one_pod,
)

# The vectorized path's int64 arrays hold free capacities and requests up to this size; a
# difference of two such values cannot overflow. Larger quantities (an exbibyte of memory, in
# milli-units) switch the snapshot to exact Python integers and the plain path.
EXACT_LIMIT = 2**62
DEFAULT_PODS_ALLOCATABLE = 110_000  # Kubernetes' default max pods per node, in milli-pods

# what decides a pod set's eligible leaves: tolerations, node selector, required affinity
EligibilityKey = tuple[
    tuple[Toleration, ...], tuple[tuple[str, str], ...], tuple[NodeSelectorTerm, ...]
]
LeafKey = tuple[str, ...]  # the values of a leaf in assignments: (hostname,) or the full path


@dataclass
class _Eligibility:
    """Which leaves a pod set's taints/selector/affinity allow, and why the others are out."""

    allowed: np.ndarray | None  # bool per leaf; None: every leaf
    node_selector: int = 0
    affinity: int = 0
    taints: dict[str, int] | None = None
    draining: int = 0  # leaves otherwise allowed but draining (SolverOptions.draining_domains)


class LeafCapacity:
    """The tree, the leaves' remaining capacity and their eligibility for one flavor."""

    def __init__(
        self,
        levels: Sequence[str],
        nodes: Iterable[Node],
        flavor: FlavorSpec = FlavorSpec(),  # noqa: B008 - frozen dataclass, never mutated
        options: SolverOptions = SolverOptions(),  # noqa: B008
        *,
        reference: bool = False,
    ) -> None:
        """`reference`: place with the plain path only (Python over every domain), which the
        vectorized path must match exactly; for tests, slower at scale."""
        if not levels:
            raise ValueError("a topology needs at least one level")
        self.levels = tuple(levels)
        self.flavor = flavor
        self.options = options
        self.reference = reference
        self.hostname_lowest = self.levels[-1] == HOSTNAME_LEVEL
        # TASNodeFeasibilityForAllLevels: a hidden hostname level below the lowest level, whose
        # domains are then the usage domains (solver/feasibility.py)
        self.virtual_hostname = options.node_feasibility_all_levels and not self.hostname_lowest
        self.leaves_are_nodes = self.hostname_lowest or self.virtual_hostname
        self._tree_levels = (*self.levels, HOSTNAME_LEVEL) if self.virtual_hostname else self.levels
        self._nodes: dict[str, Node] = {node.name: node for node in nodes}
        self._tas_usage: dict[LeafKey, dict[str, int]] = {}
        self._tree: DomainTree | None = None  # built lazily; None after a shape change
        self._leaf_keys: list[LeafKey] = []
        self._leaf_nodes: list[list[Node]] = []
        self._leaf_by_key: dict[LeafKey, int] = {}
        # Remaining capacity: one row per resource (`_rows`: name -> row), one column per leaf
        # index; int64, or Python ints (dtype object) once a quantity passes EXACT_LIMIT.
        self._rows: dict[str, int] = {}
        self._free: np.ndarray = np.zeros((0, 0), dtype=np.int64)
        self._eligibility_cache: dict[EligibilityKey, _Eligibility] = {}
        self._affinity_cache: dict[
            tuple[EligibilityKey, tuple[PreferredSchedulingTerm, ...]], list[int]
        ] = {}
        # with a virtual hostname level: usage domain path -> its position at its level, and
        # the admitted usage of each (resources x usage domains; None: to be rebuilt)
        self._usage_domains: dict[LeafKey, int] = {}
        self._usage_array: np.ndarray | None = None
        # per label key: every leaf's value as a code, and value -> code (for node selectors)
        self._label_columns: dict[str, tuple[np.ndarray, dict[str, int]]] = {}
        self._tainted_leaves: list[int] = []  # leaves whose node has taints
        self._draining: np.ndarray | None = None  # leaves whose nodes all drain; None: none
        self._numa = NumaColumns()  # the zones of leaves whose node reports them
        self._group_layout: groups.Layout | None = None
        self._group_layout_of: DomainTree | None = None

    def upsert_node(self, node: Node) -> None:
        old = self._nodes.get(node.name)
        self._nodes[node.name] = node
        if self._tree is None:
            return
        old_key = self._leaf_key_of(old) if old is not None else None
        new_key = self._leaf_key_of(node)
        if old_key is None and new_key is None:
            return
        same_shape = (
            old is not None
            and old_key == new_key
            and old.labels == node.labels
            and old.taints == node.taints
        )
        if not same_shape or new_key is None:
            self._tree = None
            return
        leaf = self._leaf_by_key[new_key]
        self._leaf_nodes[leaf] = [
            node if n.name == node.name else n for n in self._leaf_nodes[leaf]
        ]
        self._refresh_leaf(leaf)

    def remove_node(self, name: str) -> None:
        old = self._nodes.pop(name, None)
        if old is not None and self._tree is not None and self._leaf_key_of(old) is not None:
            self._tree = None

    def add_usage(self, assignment: TopologyAssignment, per_pod: Resources, sign: int = 1) -> None:
        """With a virtual hostname level the usage stays on the usage domains the assignment
        names: no leaf (node) is charged (solver/feasibility.py)."""
        per_pod = with_one_pod(per_pod)
        leaf_by_key = self._leaf_by_key if self._tree is not None else {}
        if self.virtual_hostname:
            leaf_by_key = {}
            self._usage_array = None
        pods_on_leaf: dict[int, int] = {}  # leaf index -> pods added (negative: removed)
        for domain in assignment.domains:
            key = self._key_of_assigned(domain.values)
            pods = domain.count * sign
            usage = self._tas_usage.setdefault(key, {})
            for name, value in per_pod.items():
                usage[name] = usage.get(name, 0) + value * pods
            leaf = leaf_by_key.get(key)
            if leaf is not None:
                pods_on_leaf[leaf] = pods_on_leaf.get(leaf, 0) + pods
        if pods_on_leaf:
            self._take_free(pods_on_leaf, per_pod)

    def _take_free(self, pods_on_leaf: dict[int, int], per_pod: Mapping[str, int]) -> None:
        """Remaining capacity minus `per_pod` times the pods on each leaf, in one array
        operation while every value stays within EXACT_LIMIT, else in Python integers."""
        leaves = np.fromiter(pods_on_leaf, dtype=np.intp, count=len(pods_on_leaf))
        pods = list(pods_on_leaf.values())
        rows = np.array([self._row(name) for name in per_pod], dtype=np.intp)
        values = list(per_pod.values())
        cells = np.ix_(rows, leaves)
        if (
            self._free.dtype != object
            and max(map(abs, values)) * max(map(abs, pods)) <= EXACT_LIMIT
        ):
            # each term within 2**62: the int64 difference cannot overflow
            remaining = self._free[cells] - np.outer(values, pods)
            if np.abs(remaining).max() <= EXACT_LIMIT:
                self._free[cells] = remaining
                return
        exact = [
            [free - value * count for free, count in zip(row, pods, strict=True)]
            for row, value in zip(self._free[cells].tolist(), values, strict=True)
        ]
        if self._free.dtype != object:
            self._free = self._free.astype(object)
        self._free[cells] = np.array(exact, dtype=object)

    def build(self) -> None:
        """Build the domain tree and the capacity arrays now rather than at the first
        placement (which otherwise pays for it; a shape change rebuilds them)."""
        self._ensure_tree()
        if self._numa.by_leaf:
            self._numa.arrays()

    def node(self, name: str) -> Node | None:
        """A node as this snapshot counts it: with its usage outside topology-aware admission
        and, on a NUMA node, its zones' free capacity."""
        return self._nodes.get(name)

    def remaining(self) -> dict[LeafKey, dict[str, int]]:
        """Every leaf's remaining capacity, by its key as assignments name it (negative where
        over-committed): what placement counts. Read-only; for views of the snapshot."""
        self._ensure_tree()
        names = list(self._rows)  # in row order: a row is added at the end
        columns = self._free.T.tolist()
        return {
            key: dict(zip(names, column, strict=True))
            for key, column in zip(self._leaf_keys, columns, strict=True)
        }

    def group_layout(self) -> groups.Layout:
        """The tree as the group planner sees it (rebuilt with the tree)."""
        tree = self._ensure_tree()
        if self._group_layout is None or self._group_layout_of is not tree:
            self._group_layout = groups.Layout(self.levels, [leaf.values for leaf in tree.leaves])
            self._group_layout_of = tree
        return self._group_layout

    def leaf_path(self, values: Sequence[str]) -> tuple[str, ...] | None:
        """The full level values of an assigned domain (which may name the hostname only; below
        a virtual hostname level, a usage domain, which has them all)."""
        tree = self._ensure_tree()
        if self.virtual_hostname:
            return tuple(values) if tuple(values) in self._usage_domains else None
        index = self._leaf_by_key.get(self._key_of_assigned(values))
        return None if index is None else tree.leaves[index].values

    def _occupied_leaves(self, tree: DomainTree) -> np.ndarray:
        """Leaves holding admitted pods (below a virtual hostname level: in a usage domain
        that does, the leaf's parent). One whose pods have all left keeps a usage entry of
        zeros: it is empty again."""
        keys = [leaf.values[:-1] for leaf in tree.leaves] if self.virtual_hostname else None
        return np.array(
            [self._tas_usage.get(key, {}).get(PODS, 0) > 0 for key in keys or self._leaf_keys],
            dtype=bool,
        )

    def _usage_bounds(
        self,
        tree: DomainTree,
        requests: Resources,
        leader_requests: Resources | None,
        assumed: dict[int, dict[str, int]],
    ) -> feasibility.UsageBounds | None:
        """With a virtual hostname level: what each usage domain's own remaining capacity
        holds (its nodes' free capacity, less admitted usage and earlier pod sets')."""
        if not self.virtual_hostname or not tree.leaves:
            return None
        free = self._free_after(assumed)
        starts = tree.child_starts[-1]
        widest = max(b - a for a, b in itertools.pairwise(tree.child_bounds[-1]))
        used = self._usage_used()
        exact = (
            free.dtype != object
            and used.dtype != object
            and int(np.abs(free).max(initial=0)) * widest <= EXACT_LIMIT
        )
        if not exact:  # a sum of int64 could overflow: Python integers
            free, used = free.astype(object), used.astype(object)
        remaining = np.add.reduceat(free, starts, axis=1) - used
        return feasibility.usage_bounds(remaining, self._rows, requests, leader_requests)

    def _usage_used(self) -> np.ndarray:
        """Admitted usage per usage domain (resources x usage domains), kept until it changes.
        Usage of a domain with no counted node is left out, as Kueue skips it."""
        if self._usage_array is None:
            used = [[0] * len(self._usage_domains) for _ in self._rows]
            for key, usage in self._tas_usage.items():
                position = self._usage_domains.get(key)
                if position is None:
                    continue
                for name, value in usage.items():
                    row = self._rows.get(name)
                    if row is not None:  # an unknown resource: no capacity to bound anyway
                        used[row][position] += value
            exact = all(abs(v) <= EXACT_LIMIT for row in used for v in row)
            self._usage_array = np.array(used, dtype=np.int64 if exact else object).reshape(
                len(self._rows), len(self._usage_domains)
            )
        return self._usage_array

    def _free_after(self, assumed: dict[int, dict[str, int]]) -> np.ndarray:
        """The remaining-capacity array with earlier pod sets' usage taken off (a copy only
        when there is some)."""
        if not assumed:
            return self._free
        free = self._free.copy()
        for leaf_index, usage in assumed.items():
            for name, value in usage.items():
                if name in self._rows:
                    free[self._rows[name], leaf_index] -= value
        return free

    def _pods_per_leaf(self, podset: PodSetRequest) -> np.ndarray:
        """How many of the pod set's pods every leaf holds (0 where it may not run)."""
        requests = with_one_pod(podset.requests)
        if self._free.dtype == object:
            capacity = np.array(self._counts_per_leaf(requests), dtype=np.int64)
        else:
            capacity = vectorized.pods_that_fit(
                vectorized.resource_fits(self._free, self._rows, requests)[1]
            )
        allowed = self._eligibility(podset).allowed
        if allowed is not None:
            capacity = np.where(allowed, capacity, 0)
        return capacity

    def _counts_per_leaf(self, requests: Mapping[str, int]) -> list[int]:
        """How many pods of this shape fit on every leaf, one resource at a time."""
        leaf_total = len(self._leaf_keys)
        counts: list[int] | None = None
        for name, request in requests.items():
            if request <= 0:
                continue
            row = self._rows.get(name)
            if row is None:
                return [0] * leaf_total
            fits = [free // request for free in self._free[row].tolist()]
            counts = fits if counts is None else list(map(min, counts, fits))
        if counts is None:
            return [0] * leaf_total
        return [c if c > 0 else 0 for c in counts]

    def _remaining(self, leaf_index: int, usage: Mapping[str, int] | None) -> dict[str, int]:
        remaining = dict(zip(self._rows, self._free[:, leaf_index].tolist(), strict=True))
        if usage:
            for name, value in usage.items():
                remaining[name] = remaining.get(name, 0) - value
        return remaining

    def _limiting_resource(
        self, leaf_index: int, requests: Mapping[str, int], assumed: dict[int, dict[str, int]]
    ) -> str:
        """The resource giving the smallest count, ties broken by name (Kueue's rule)."""
        remaining = self._remaining(leaf_index, assumed.get(leaf_index))
        best_name, best_count = "", None
        for name in sorted(requests):
            request = requests[name]
            if request <= 0:
                continue
            count = max(0, remaining.get(name, 0) // request)
            if best_count is None or count < best_count:
                best_name, best_count = name, count
        return best_name

    def _eligibility(self, podset: PodSetRequest) -> _Eligibility:
        """Taints, nodeSelector and required affinity, checked only where leaves are nodes; a
        leaf is counted under the first check it fails, in that order. Draining leaves last."""
        if not self.leaves_are_nodes:
            return self._without_draining(_Eligibility(allowed=None))
        cache_key = self._eligibility_key(podset)
        cached = self._eligibility_cache.get(cache_key)
        if cached is not None:
            return cached
        tolerations = cache_key[0]
        if self.reference:
            result = self._eligibility_per_leaf(podset, tolerations)
        else:
            result = self._eligibility_by_columns(podset, tolerations)
        result = self._without_draining(result)
        self._eligibility_cache[cache_key] = result
        return result

    def _without_draining(self, result: _Eligibility) -> _Eligibility:
        """The draining leaves taken out of what `result` allows, and counted (ours)."""
        draining = self._draining
        if draining is None:
            return result
        allowed = result.allowed
        result.draining = int((draining if allowed is None else draining & allowed).sum())
        result.allowed = ~draining if allowed is None else allowed & ~draining
        return result

    def _eligibility_key(self, podset: PodSetRequest) -> EligibilityKey:
        return (
            tuple(podset.tolerations) + tuple(self.flavor.tolerations),
            tuple(sorted(podset.node_selector.items())),
            tuple(podset.required_affinity),
        )

    def _affinity_scores(self, podset: PodSetRequest) -> list[int] | None:
        """TASRespectNodeAffinityPreferred: every leaf's preferred node affinity score (0 where
        the pod set may not run), or None when no score orders this placement: the gate is
        off, leaves are not nodes, or the pod set has no term that scores."""
        if not (self.options.respect_node_affinity_preferred and self.leaves_are_nodes):
            return None
        terms = scoring_terms(podset.preferred_affinity)
        if not terms:
            return None
        cache_key = (self._eligibility_key(podset), terms)
        scores = self._affinity_cache.get(cache_key)
        if scores is None:
            allowed = self._eligibility(podset).allowed
            scores = [
                affinity_score(nodes[0].labels, terms) if allowed is None or allowed[i] else 0
                for i, nodes in enumerate(self._leaf_nodes)
            ]
            self._affinity_cache[cache_key] = scores
        return scores

    def _eligibility_by_columns(
        self, podset: PodSetRequest, tolerations: tuple[Toleration, ...]
    ) -> _Eligibility:
        """Only tainted leaves are looked at one by one, and the leaves left for required
        affinity; a node selector compares label columns."""
        taints: dict[str, int] = {}
        result = _Eligibility(allowed=None, taints=taints)
        excluded = np.zeros(len(self._leaf_nodes), dtype=bool)
        for index in self._tainted_leaves:
            taint = first_untolerated_taint(self._leaf_nodes[index][0].taints, tolerations)
            if taint is not None:
                text = taint_string(taint)
                taints[text] = taints.get(text, 0) + 1
                excluded[index] = True
        if podset.node_selector:
            selected = np.ones(len(excluded), dtype=bool)
            for key, value in podset.node_selector.items():
                codes, code_of = self._label_column(key)
                selected &= codes == code_of.get(value, -2)  # -1: no such label
            unselected = ~selected & ~excluded
            result.node_selector = int(unselected.sum())
            excluded |= unselected
        if podset.required_affinity:
            for index in (~excluded).nonzero()[0].tolist():
                labels = self._leaf_nodes[index][0].labels
                if not matches_required_affinity(labels, podset.required_affinity):
                    result.affinity += 1
                    excluded[index] = True
        if excluded.any():
            result.allowed = ~excluded
        return result

    def _label_column(self, key: str) -> tuple[np.ndarray, dict[str, int]]:
        """Every leaf's value of a label as a code (-1 where it has none), and the codes."""
        column = self._label_columns.get(key)
        if column is None:
            code_of: dict[str, int] = {}
            codes = [
                code_of.setdefault(nodes[0].labels[key], len(code_of))
                if key in nodes[0].labels
                else -1
                for nodes in self._leaf_nodes
            ]
            column = self._label_columns[key] = (np.array(codes, dtype=np.int64), code_of)
        return column

    def _eligibility_per_leaf(
        self, podset: PodSetRequest, tolerations: tuple[Toleration, ...]
    ) -> _Eligibility:
        """The plain path's: every leaf checked in Python."""
        allowed = [True] * len(self._leaf_nodes)
        taints: dict[str, int] = {}
        result = _Eligibility(allowed=None, taints=taints)
        for index, nodes in enumerate(self._leaf_nodes):
            node = nodes[0]
            taint = first_untolerated_taint(node.taints, tolerations) if node.taints else None
            if taint is not None:
                text = taint_string(taint)
                taints[text] = taints.get(text, 0) + 1
            elif not matches_node_selector(node.labels, podset.node_selector):
                result.node_selector += 1
            elif not matches_required_affinity(node.labels, podset.required_affinity):
                result.affinity += 1
            else:
                continue
            allowed[index] = False
        if not all(allowed):
            result.allowed = np.array(allowed, dtype=bool)
        return result

    @staticmethod
    def _assume(
        assumed: dict[int, dict[str, int]], leaves: list[tuple[Domain, int]], per_pod: Resources
    ) -> None:
        """Earlier pod sets' pods, on the leaves they were placed on (below a virtual hostname
        level, the nodes, which the assignment does not name)."""
        for leaf, count in leaves:
            if count <= 0:
                continue
            usage = assumed.setdefault(leaf.leaf_index, {})
            for name, value in per_pod.items():
                usage[name] = usage.get(name, 0) + value * count
            usage[PODS] = usage.get(PODS, 0) + ONE_POD * count

    def _key_of_assigned(self, values: Sequence[str]) -> LeafKey:
        if self.hostname_lowest:
            return (values[-1],)
        return tuple(values)

    def _assignment(self, leaves_with_counts: list[tuple[Domain, int]]) -> TopologyAssignment:
        """Kueue's assignment of leaves; below a virtual hostname level, of their parents."""
        if self.virtual_hostname:
            leaves_with_counts = feasibility.counts_by_parent(leaves_with_counts)
        # Kueue sorts by the full level values even when only the hostname is reported: the
        # leaves' order in the tree.
        ordered = sorted(leaves_with_counts, key=lambda item: item[0].order)
        if self.hostname_lowest:
            levels: tuple[str, ...] = (HOSTNAME_LEVEL,)
            domains = tuple(
                DomainAssignment(values=(d.values[-1],), count=c) for d, c in ordered if c > 0
            )
        else:
            levels = self.levels
            domains = tuple(DomainAssignment(values=d.values, count=c) for d, c in ordered if c > 0)
        return TopologyAssignment(levels=levels, domains=domains)

    def _leaf_key_of(self, node: Node) -> LeafKey | None:
        """The leaf a node belongs to, or None when the node does not count for this flavor."""
        if not node.ready or node.unschedulable:
            return None
        labels = node.labels
        for key, value in self.flavor.node_labels.items():
            if labels.get(key) != value:
                return None
        for level in self.levels:
            if level not in labels:
                return None
        if self.hostname_lowest:
            return (labels[HOSTNAME_LEVEL],)
        if self.virtual_hostname:
            # by name: a hostname label need not be there, nor be unique (as in Kueue)
            return (node.name,)
        return tuple(labels[level] for level in self.levels)

    def _path_of(self, node: Node) -> tuple[str, ...]:
        """A counted node's leaf: its value at every level of the tree."""
        path = tuple(node.labels[level] for level in self.levels)
        return (*path, node.name) if self.virtual_hostname else path

    def _ensure_tree(self) -> DomainTree:
        if self._tree is not None:
            return self._tree
        nodes_by_key: dict[LeafKey, list[Node]] = {}
        for node in self._nodes.values():
            key = self._leaf_key_of(node)
            if key is not None:
                nodes_by_key.setdefault(key, []).append(node)
        path_of = {key: self._path_of(nodes[0]) for key, nodes in nodes_by_key.items()}
        keys = sorted(nodes_by_key, key=lambda k: path_of[k])
        tree = DomainTree(len(self._tree_levels), [path_of[k] for k in keys])
        self._leaf_keys = keys
        self._leaf_nodes = [nodes_by_key[k] for k in keys]
        self._leaf_by_key = {key: index for index, key in enumerate(keys)}
        self._eligibility_cache = {}
        self._affinity_cache = {}
        self._label_columns = {}
        if self.virtual_hostname:
            self._usage_domains = {d.values: d.order for d in tree.levels[-2]}
            self._usage_array = None
        self._tainted_leaves = [i for i, nodes in enumerate(self._leaf_nodes) if nodes[0].taints]
        self._draining = self._draining_leaves()
        self._numa = NumaColumns(
            {
                index: nodes[0].numa
                for index, nodes in enumerate(self._leaf_nodes)
                if self.hostname_lowest and nodes[0].numa is not None
            }
        )
        self._tree = tree
        remaining = [self._leaf_remaining(index) for index in range(len(keys))]
        names = {PODS: None}
        for leaf in remaining:
            names.update(dict.fromkeys(leaf))
        self._rows = {name: row for row, name in enumerate(names)}
        values = [[leaf.get(name, 0) for leaf in remaining] for name in self._rows]
        exact = all(-EXACT_LIMIT <= v <= EXACT_LIMIT for row in values for v in row)
        self._free = np.array(values, dtype=np.int64 if exact else object).reshape(
            len(self._rows), len(keys)
        )
        return tree

    def _draining_leaves(self) -> np.ndarray | None:
        """With TASDrainingDomains, the leaves every node of which drains (a rack leaf with
        one draining node still takes pods); None when there are none."""
        if not self.options.draining_domains:
            return None
        mask = np.array([all(n.draining for n in nodes) for nodes in self._leaf_nodes], dtype=bool)
        return mask if mask.any() else None

    def _row(self, name: str) -> int:
        """The row of a resource, added (zero on every leaf) when new."""
        row = self._rows.get(name)
        if row is None:
            self._usage_array = None
            row = self._rows[name] = len(self._rows)
            new = np.zeros((1, self._free.shape[1]), dtype=self._free.dtype)
            self._free = np.vstack([self._free, new])
        return row

    def _set_free(self, row: int, leaf_index: int, value: int) -> None:
        if not -EXACT_LIMIT <= value <= EXACT_LIMIT and self._free.dtype != object:
            self._free = self._free.astype(object)
        self._free[row, leaf_index] = value

    def _leaf_remaining(self, index: int) -> dict[str, int]:
        """A leaf's remaining capacity from its nodes and admitted usage."""
        remaining: dict[str, int] = {}
        for node in self._leaf_nodes[index]:
            allocatable = dict(node.allocatable)
            allocatable.setdefault(PODS, DEFAULT_PODS_ALLOCATABLE)
            for name, value in allocatable.items():
                remaining[name] = remaining.get(name, 0) + value
            for name, value in node.usage.items():
                remaining[name] = remaining.get(name, 0) - value
        if not self.virtual_hostname:
            for name, value in self._tas_usage.get(self._leaf_keys[index], {}).items():
                remaining[name] = remaining.get(name, 0) - value
        return remaining

    def _refresh_leaf(self, index: int) -> None:
        if self.hostname_lowest:
            self._numa.update(index, self._leaf_nodes[index][0].numa)
        remaining = self._leaf_remaining(index)
        for name in remaining:
            self._row(name)
        for name, row in self._rows.items():
            self._set_free(row, index, remaining.get(name, 0))
