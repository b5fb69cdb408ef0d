"""Hot swaps as the view shows them: an admitted workload whose topology assignment, from one
version to the next, left some hosts and took others while it kept its quota (hot swap
rewrote it).

Fed by the cache's workload listener, on every version, whether or not anyone watches the page
(the page is rebuilt only while watched, so comparing views would miss a swap made meanwhile).
Reading the Workloads rather than the hot-swap controller shows every replacement whoever
wrote it (this replica, the previous leader) and keeps the controller free of the view.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable

from tas.cache.charges import charge_of
from tas.cache.projections import WorkloadInfo
from tas.view.model import ReplacementView

log = logging.getLogger(__name__)

KEPT = 20  # the most recent replacements shown


class ReplacementLog:
    def __init__(self, kept: int = KEPT, clock: Callable[[], float] = time.time) -> None:
        self._recent: deque[ReplacementView] = deque(maxlen=kept)
        self._clock = clock

    @property
    def recent(self) -> tuple[ReplacementView, ...]:
        """The most recent first."""
        return tuple(self._recent)

    def workload_changed(self, old: WorkloadInfo | None, new: WorkloadInfo) -> None:
        """The cache's workload listener: called with the version held and the one taken."""
        if old is None or old.uid != new.uid or old.admissions == new.admissions:
            return  # cheap: most versions change no assignment
        try:
            before, after = admitted_hosts(old), admitted_hosts(new)
        except Exception:  # called from the cache's mutator: the view never breaks the cache
            log.exception("view: replacement of %s/%s not recorded", new.namespace, new.name)
            return
        if before and after:  # kept its quota: not an eviction or a first admission
            self.moved(f"{new.namespace}/{new.name}", before, after, self._clock())

    def moved(
        self, workload: str, before: frozenset[str], after: frozenset[str], at: float
    ) -> None:
        """Record one replacement per host left, paired with the hosts taken in name order (the
        extra ones with the last)."""
        left, took = sorted(before - after), sorted(after - before)
        if not (left and took):
            return  # it only shrank or grew
        for i, failed in enumerate(left):
            replacement = took[min(i, len(took) - 1)]
            self._recent.appendleft(ReplacementView(workload, failed, replacement, at))


def admitted_hosts(workload: WorkloadInfo) -> frozenset[str]:
    """The lowest domains (hosts, where the hostname is a level) its admission assigns."""
    charge = charge_of(workload)
    if charge is None:
        return frozenset()
    return frozenset(
        domain.values[-1]
        for ps in charge.pod_sets
        if ps.assignment is not None
        for domain in ps.assignment.domains
    )
