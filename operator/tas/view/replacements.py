"""Hot swaps as the view sees them: an admitted workload that, between two views, left some
hosts and took others while staying admitted (hot swap rewrote its topology assignment).

Read from successive views rather than from the hot-swap controller, so the page shows every
replacement whatever wrote it (this replica, the previous leader) and the controller stays
free of the view.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from tas.view.model import ClusterView, ReplacementView

KEPT = 20  # the most recent replacements shown


class ReplacementLog:
    def __init__(self, kept: int = KEPT) -> None:
        self._hosts: Mapping[str, frozenset[str]] | None = None  # None: no view seen yet
        self._recent: deque[ReplacementView] = deque(maxlen=kept)

    def observe(self, view: ClusterView, now: float) -> tuple[ReplacementView, ...]:
        """Record the replacements since the previous view; the most recent first."""
        hosts = {w.key: frozenset(w.hosts) for w in view.workloads if w.admitted}
        if self._hosts is not None:
            for key, now_on in hosts.items():
                before = self._hosts.get(key)
                if before is None:
                    continue  # newly admitted, not moved
                left, took = sorted(before - now_on), sorted(now_on - before)
                if left and took:
                    # one per failed host, paired in name order; extra ones pair with the last
                    for i, failed in enumerate(left):
                        replacement = took[min(i, len(took) - 1)]
                        self._recent.appendleft(ReplacementView(key, failed, replacement, now))
        self._hosts = hosts
        return tuple(self._recent)
