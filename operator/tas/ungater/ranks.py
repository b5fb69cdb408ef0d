"""A pod's rank in its pod set, Kueue's rule (the topology ungater's `readRanksForLabels`).

Each integration names the label that holds a pod's index in its pod set's topology request
(`podIndexLabel`): a Job's completion index, a LeaderWorkerSet's worker index, a pod group's
pod index. A JobSet's pod set is `replicas` Jobs of `count / replicas` pods: its rank is the
completion index plus the Job's index (`subGroupIndexLabel`) times the Job's size, so Job i
fills ranks [i * size, (i + 1) * size) - one slice when the slice size is the Job's size.
Two pod sets grouped by `podset-group-name` (a LeaderWorkerSet's leader and workers) share
one index space: the smaller pod set (the leader) starts at 0, the other at its count.
A pod set whose pods carry `kueue.x-k8s.io/pod-index-offset` (an MPIJob's workers when the
launcher also works: their replica index starts at 1) starts at that offset too, on top of
its group's.

Ranks map to the assignment's slots in order, so neighbours in rank are neighbours in the
topology. A pod set whose pods cannot all be ranked (an index missing, out of range or taken
twice) is placed in name order instead, as Kueue falls back to greedy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tas.api.constants import POD_INDEX_OFFSET_ANNOTATION
from tas.cache.projections import PodInfo
from tas.solver.types import PodSetRequest, TopologyRequest


@dataclass(frozen=True)
class RankRule:
    pod_index_label: str
    count: int  # the pod set's assigned count: ranks are 0 .. count - 1
    offset: int = 0  # subtracted from the index: the leader's count, for the workers
    max_index: int | None = None  # an index at or above is out of range (default: count)
    sub_group_index_label: str | None = None
    sub_group_count: int | None = None


def rule_for(
    request: TopologyRequest | None, count: int, offset: int = 0, max_index: int | None = None
) -> RankRule | None:
    if request is None or not request.pod_index_label:
        return None
    sub_group = request.sub_group_index_label and request.sub_group_count
    return RankRule(
        pod_index_label=request.pod_index_label,
        count=count,
        offset=offset,
        max_index=max_index,
        sub_group_index_label=request.sub_group_index_label if sub_group else None,
        sub_group_count=request.sub_group_count if sub_group else None,
    )


# What Go's strconv.Atoi accepts (Kueue parses the offset with it): a sign, ASCII digits, int64.
_ATOI = re.compile(r"[+-]?[0-9]+")
INT64_MAX = 2**63 - 1


class IndexOffsetError(ValueError):
    """A pod's offset annotation is no integer: Kueue ungates none of the workload's pods and
    retries, and so do we (the worker's backoff)."""


def index_offset(pods: Iterable[PodInfo]) -> int:
    """The pod set's POD_INDEX_OFFSET_ANNOTATION, 0 without one. Read from the first pod not
    finished that the cache lists, as Kueue reads the first its client lists: all of a pod
    set's pods come from one template."""
    pod = next((p for p in pods if not p.terminal), None)
    if pod is None or pod.index_offset is None:
        return 0
    value = pod.index_offset
    if _ATOI.fullmatch(value) and -INT64_MAX - 1 <= int(value) <= INT64_MAX:
        return int(value)
    raise IndexOffsetError(
        f"pod {pod.namespace}/{pod.name}: annotation {POD_INDEX_OFFSET_ANNOTATION}: "
        f"{value!r} is not an integer"
    )


def pod_set_rule(
    request: TopologyRequest | None,
    count: int,
    pods: Iterable[PodInfo],
    group: tuple[int, int] | None = None,
) -> RankRule | None:
    """The pod set's rule: its group's (offset, max index) from group_offsets, both moved by
    the offset its pods carry, as Kueue adds the two. Raises IndexOffsetError."""
    offset, max_index = group or (0, count)
    shift = index_offset(pods)
    return rule_for(request, count, offset + shift, max_index + shift)


def group_offsets(
    pod_sets: Sequence[PodSetRequest], counts: Mapping[str, int]
) -> dict[str, tuple[int, int]]:
    """pod set -> (offset, max index): two pod sets of one podset-group-name share the index
    space, the smaller one (the leader; on a tie the first) first. Counts are the assigned
    ones."""
    groups: dict[str, list[str]] = {}
    for ps in pod_sets:
        if ps.topology.group_name:
            groups.setdefault(ps.topology.group_name, []).append(ps.name)
    out: dict[str, tuple[int, int]] = {}
    for members in groups.values():
        if len(members) != 2:
            continue
        first, second = members
        small, large = (second, first) if counts.get(first, 0) > counts.get(second, 0) else members
        out[small] = (0, counts.get(small, 0))
        out[large] = (counts.get(small, 0), counts.get(large, 0) + counts.get(small, 0))
    return out


def rank_of(pod: PodInfo, rule: RankRule) -> int | None:
    index = pod.index_labels.get(rule.pod_index_label)
    max_index = rule.count if rule.max_index is None else rule.max_index
    if index is None or index >= max_index:
        return None
    rank = index - rule.offset
    if rule.sub_group_index_label and rule.sub_group_count:
        job = pod.index_labels.get(rule.sub_group_index_label)
        size = rule.count // rule.sub_group_count
        if job is None or job >= rule.sub_group_count or index >= size:
            return None
        rank = index + job * size - rule.offset
    return rank if 0 <= rank < rule.count else None


def ranks(pods: Iterable[PodInfo], rule: RankRule | None) -> dict[str, int] | None:
    """uid -> rank for every pod, or None when they cannot all be ranked (greedy then)."""
    if rule is None:
        return None
    out: dict[str, int] = {}
    taken: set[int] = set()
    for pod in pods:
        rank = rank_of(pod, rule)
        if rank is None or rank in taken:
            return None
        taken.add(rank)
        out[pod.uid] = rank
    return out
