"""Kueue's admission fair sharing: within a ClusterQueue whose admissionScope is
UsageBasedAdmissionFairSharing, the workloads of the LocalQueue that used least come first.

As Kueue v0.17 (pkg/util/admissionfairsharing, pkg/cache/queue/afs, the LocalQueue and Workload
controllers): each LocalQueue's consumed resources decay towards its admitted workloads' usage,
sampled every usageSamplingInterval with alpha = 1 - 0.5^(elapsed / usageHalfLifeTime); an
admission charges its LocalQueue an entry penalty (its requests times the alpha of one
interval) at once, which is folded into the consumed resources when the admission is stored.
A LocalQueue's usage is the sum of its consumed resources and penalties, each resource times
its resourceWeight (1 when not named), divided by the LocalQueue's fairSharing.weight.

Quantities are milli-units, scaled with truncation as Kueue's resource.MulByFloat does. The
state lives on the admission loop's event loop only; one timer per sampling interval samples
every LocalQueue from the cache (no reads of the API server).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar, overload

from tas.api.fairsharing import AdmissionFairSharing
from tas.api.format import format_milli
from tas.api.quantity import parse_milli, parse_quantity
from tas.cache.projections import ClusterQueueInfo, Key, WorkloadInfo
from tas.cache.state import ClusterState

Milli = dict[str, int]  # resource -> milli-units

log = logging.getLogger(__name__)
T = TypeVar("T")


# ---- Kueue's formulas (pure) --------------------------------------------------------------


def alpha_rate(elapsed: float, half_life: float) -> float:
    """The weight of the new sample after `elapsed` seconds; a half life of 0 keeps none of
    the old (Kueue's calculateAlphaRate returns 0 there and the sampler resets instead)."""
    if half_life == 0:
        return 0.0
    return 1.0 - math.pow(0.5, elapsed / half_life)


def scaled(resources: Mapping[str, int], factor: float) -> Milli:
    """Kueue's resource.MulByFloat: each milli value times factor, truncated."""
    return {r: int(v * factor) for r, v in resources.items()}


def summed(a: Mapping[str, int], b: Mapping[str, int]) -> Milli:
    """Kueue's MergeResourceListKeepSum."""
    return {r: a.get(r, 0) + b.get(r, 0) for r in {*a, *b}}


def decayed_consumed(
    old: Mapping[str, int], new: Mapping[str, int], elapsed: float, half_life: float
) -> Milli:
    """Kueue's CalculateDecayedConsumed: old * (1 - alpha) + new * alpha."""
    alpha = alpha_rate(elapsed, half_life)
    return summed(scaled(old, 1 - alpha), scaled(new, alpha))


def entry_penalty(requests: Mapping[str, int], config: AdmissionFairSharing) -> Milli:
    """Kueue's CalculateEntryPenalty: what one sampling interval of this admission adds."""
    alpha = alpha_rate(config.usage_sampling_interval_seconds, config.usage_half_life_seconds)
    return scaled(requests, alpha)


def local_queue_usage(
    consumed: Mapping[str, int],
    penalty: Mapping[str, int],
    lq_weight: float,
    config: AdmissionFairSharing,
) -> float:
    """Kueue's CalcFSUsageFromResources, in Kueue's units (milli / 1000). A LocalQueue of
    weight 0 that used anything comes last (Kueue divides by the 0)."""
    both = summed(consumed, penalty)
    total = sum(config.weight(r) * both[r] / 1000 for r in sorted(both))
    if lq_weight == 0:
        return math.inf if total > 0 else 0.0
    return total / lq_weight


def workload_requests(workload: WorkloadInfo) -> Milli:
    """Kueue's SumTotalRequests: every pod set's per-pod requests times its count."""
    out: Milli = {}
    for pod_set in workload.pod_sets:
        for r, v in pod_set.requests.items():
            out[r] = out.get(r, 0) + v * pod_set.count
    return out


def admitted_usage(state: ClusterState) -> dict[Key, Milli]:
    """Each LocalQueue's admitted workloads' usage (Kueue's GetAdmittedUsage): the stored
    charges; an assumption whose write has not landed is priced by its entry penalty."""
    usage: dict[Key, Milli] = {}
    for key, charge in state.charges().items():
        workload = state.workloads.get(key)
        if workload is None or state.is_assumed(key):
            continue
        lq = usage.setdefault((workload.namespace, workload.queue_name), {})
        for pod_set in charge.pod_sets:
            for r, v in pod_set.requests.items():
                lq[r] = lq.get(r, 0) + v * pod_set.count
    return usage


class FairOrder(Sequence[T]):
    """A queue's workloads, each next one chosen when it is asked for: the head of the
    LocalQueue (`lane_of`) whose usage is least at that moment, ties in the queue's usual order
    (the order given). Kueue sorts its heap by usage again as entry penalties land; so an
    admission made while the queue is walked moves its LocalQueue back at once. Indexes are
    read in order (0, 1, ...)."""

    def __init__(
        self, ordered: list[T], lane_of: Callable[[T], Key], usage_of: Callable[[Key], float]
    ) -> None:
        self._usage_of = usage_of
        self._lanes: dict[Key, deque[tuple[int, T]]] = {}
        for rank, item in enumerate(ordered):
            self._lanes.setdefault(lane_of(item), deque()).append((rank, item))
        self._taken: list[T] = []
        self._len = len(ordered)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._len))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(index)
        while len(self._taken) <= index:
            lane, _ = min(
                ((lane, items) for lane, items in self._lanes.items() if items),
                key=lambda pair: (self._usage_of(pair[0]), pair[1][0][0]),
            )
            self._taken.append(self._lanes[lane].popleft()[1])
        return self._taken[index]

    def __iter__(self) -> Iterator[T]:
        return (self[i] for i in range(self._len))


def _weight(local_queue: Mapping[str, Any]) -> float:
    """spec.fairSharing.weight (default 1)."""
    weight = ((local_queue.get("spec") or {}).get("fairSharing") or {}).get("weight")
    value = 1.0 if weight is None else float(parse_quantity(weight))
    if value < 0:
        raise ValueError(f"must be 0 or more, got {weight!r}")
    return value


def _lq(workload: WorkloadInfo) -> Key:
    return (workload.namespace, workload.queue_name)


# ---- the state on the admission loop ------------------------------------------------------


@dataclass
class Consumed:
    """A LocalQueue's decayed usage and when it was last sampled (seconds since the epoch)."""

    resources: Milli = field(default_factory=dict)
    last_update: float = 0.0


@dataclass(frozen=True)
class _Penalty:
    local_queue: Key
    resources: Milli


class LocalQueueUsage:
    """Admission fair sharing's state: each LocalQueue's consumed resources, its pending entry
    penalties and its weight. `config` None: off (Kueue: no admissionFairSharing section, or
    the gate off); then the queue order is Kueue's usual one and no status is written."""

    def __init__(
        self,
        state: ClusterState,
        config: AdmissionFairSharing | None,
        wake: Callable[[], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.state = state
        self.config = config
        self._wake = wake
        self._clock = clock
        self.consumed: dict[Key, Consumed] = {}
        self.penalties: dict[Key, Milli] = {}
        self._penalized: dict[Key, _Penalty] = {}  # workload -> its penalty while assumed
        self.weights: dict[Key, float] = {}
        self._timer: asyncio.TimerHandle | None = None

    @property
    def on(self) -> bool:
        return self.config is not None

    def applies_to(self, cq: ClusterQueueInfo) -> bool:
        return self.config is not None and cq.usage_based_admission_fair_sharing

    # -- LocalQueues ----------------------------------------------------------------------

    def local_queue(self, key: Key, obj: Mapping[str, Any]) -> bool:
        """A LocalQueue seen by the watch: its weight, and on first sight its stored usage
        (a restart goes on from the status, sampled from now on, as Kueue seeds it). Whether
        either changed the queues' order."""
        before = self.weights.get(key)
        try:
            self.weights[key] = _weight(obj)
        except ValueError as exc:  # the API server validates it; keep Kueue's default
            log.warning("LocalQueue %s/%s: spec.fairSharing.weight: %s", *key, exc)
            self.weights[key] = 1.0
        if self.config is None or key in self.consumed:
            return self.weights[key] != before
        self.start()  # sampling runs from the first LocalQueue on, pending workloads or not
        status = ((obj.get("status") or {}).get("fairSharing") or {}).get(
            "admissionFairSharingStatus"
        ) or {}
        try:
            stored = {r: parse_milli(q) for r, q in (status.get("consumedResources") or {}).items()}
        except ValueError as exc:
            log.warning("LocalQueue %s/%s: stored consumedResources: %s", *key, exc)
            stored = {}
        self.consumed[key] = Consumed(stored, self._clock())
        return True

    def local_queue_deleted(self, key: Key) -> None:
        self.weights.pop(key, None)
        self.consumed.pop(key, None)
        self.penalties.pop(key, None)

    # -- admissions -----------------------------------------------------------------------

    def assumed(self, workload: WorkloadInfo) -> None:
        """Kueue's scheduler: an assumed admission charges its LocalQueue's entry penalty."""
        if self.config is None:
            return
        self._take_back(workload.key)  # a decision again on a newer version: one penalty
        penalty = entry_penalty(workload_requests(workload), self.config)
        lq = _lq(workload)
        self.penalties[lq] = summed(self.penalties.get(lq, {}), penalty)
        self._penalized[workload.key] = _Penalty(lq, penalty)

    def _take_back(self, key: Key) -> _Penalty | None:
        penalty = self._penalized.pop(key, None)
        if penalty is not None:
            lq = penalty.local_queue
            left = summed(self.penalties.get(lq, {}), scaled(penalty.resources, -1))
            self.penalties[lq] = {r: v for r, v in left.items() if v}
        return penalty

    def settle(self) -> None:
        """Penalties whose admission was decided: stored, Kueue's workload controller folds
        the penalty into the consumed resources; failed, the scheduler takes it back."""
        decided = [k for k in self._penalized if not self.state.is_assumed(k)]
        usage = admitted_usage(self.state) if decided else {}
        for key in decided:
            penalty = self._take_back(key)
            assert penalty is not None
            if key in self.state.charges() and self._uses_it(penalty.local_queue):
                self._fold(
                    penalty.local_queue, usage.get(penalty.local_queue, {}), penalty.resources
                )

    def _uses_it(self, lq: Key) -> bool:
        """Kueue folds an admission in only where its ClusterQueue uses admission fair
        sharing (ClusterQueueUsesAdmissionFairSharing)."""
        cq = self.state.cluster_queues.get(self.state.local_queues.get(lq, ""))
        return cq is not None and self.applies_to(cq)

    def _fold(self, lq: Key, usage: Milli, penalty: Milli) -> None:
        assert self.config is not None
        now = self._clock()
        old = self.consumed.get(lq) or Consumed({}, now)
        new = decayed_consumed(
            old.resources, usage, now - old.last_update, self.config.usage_half_life_seconds
        )
        self.consumed[lq] = Consumed(summed(new, penalty), now)

    # -- sampling -------------------------------------------------------------------------

    def sample(self) -> None:
        """Every LocalQueue's consumed resources decayed towards its admitted usage (Kueue's
        LocalQueue reconcile); a half life of 0 resets them."""
        if self.config is None:
            return
        self.settle()
        now = self._clock()
        usage = admitted_usage(self.state)
        half_life = self.config.usage_half_life_seconds
        for lq in self.state.local_queues:
            old = self.consumed.get(lq) or Consumed({}, now)
            if half_life == 0:  # zeros, not nothing: a merge patch of the status keeps keys
                self.consumed[lq] = Consumed(dict.fromkeys(old.resources, 0), now)
                continue
            new = decayed_consumed(
                old.resources, usage.get(lq, {}), now - old.last_update, half_life
            )
            self.consumed[lq] = Consumed(new, now)

    def start(self) -> None:
        """The one sampling timer (idempotent); it re-arms itself and wakes the loop so the
        order and the LocalQueues' statuses follow."""
        if self.config is None or self._timer is not None:
            return

        def tick() -> None:
            self._timer = None
            self.sample()
            self.start()
            self._wake()

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (`tas simulate`): the caller samples itself
            return
        self._timer = loop.call_later(self.config.usage_sampling_interval_seconds, tick)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # -- reading --------------------------------------------------------------------------

    def usage(self, lq: Key) -> float:
        assert self.config is not None
        consumed = self.consumed.get(lq)
        return local_queue_usage(
            consumed.resources if consumed else {},
            self.penalties.get(lq, {}),
            self.weights.get(lq, 1.0),
            self.config,
        )

    def order(self, cq: ClusterQueueInfo, ordered: list[WorkloadInfo]) -> Sequence[WorkloadInfo]:
        """The ClusterQueue's workloads (given in Kueue's usual order) in admission order."""
        if not self.applies_to(cq):
            return ordered
        self.start()
        self.settle()
        return FairOrder(ordered, _lq, self.usage)

    def status(self, lq: Key) -> dict[str, Any] | None:
        """status.fairSharing of a LocalQueue (None when admission fair sharing is off)."""
        if self.config is None:
            return None
        consumed = self.consumed.get(lq)
        if consumed is None:
            return None
        when = datetime.fromtimestamp(consumed.last_update, UTC)
        return {
            "weightedShare": 0,
            "admissionFairSharingStatus": {
                "consumedResources": {
                    r: format_milli(r, v) for r, v in sorted(consumed.resources.items())
                },
                "lastUpdate": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
        }
