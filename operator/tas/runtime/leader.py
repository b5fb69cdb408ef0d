"""Leader election on a coordination.k8s.io/v1 Lease: only the leader admits.

Every replica keeps its caches warm and serves webhooks; the one holding the Lease runs the
admission loop and the workers that write. Defaults are controller-runtime's: a 15 s lease,
renewed every 2 s, given up when it could not be renewed for 10 s. As in client-go, a lease is
judged expired by how long this replica has watched it go unchanged, never by comparing the
holder's clock with ours. Writes are guarded by resourceVersion, so two candidates can never
both take the same lease. The leader's own writes are fenced by `time_left` (see tas.runtime.fence).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from tas.kube import Kube, KubeError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaseSettings:
    namespace: str
    name: str = "tas-operator.kueue.x-k8s.io"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    # A lease still held by an earlier process of this pod is taken after this long unchanged.
    own_lease_grace: float = 5.0


def default_identity() -> str:
    """The pod's name when the chart passes it (TAS_POD_NAME): a container the kubelet restarts
    in the same pod finds the Lease still its own and leads again after a short grace (see
    LeaseSettings.own_lease_grace), instead of waiting out the whole lease after a crash. Two live processes never share a pod's name (the kubelet stops
    a container before it starts it again). Elsewhere, the host's name and a random suffix."""
    return os.environ.get("TAS_POD_NAME") or f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


def micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        kube: Kube,
        settings: LeaseSettings,
        identity: str | None = None,
        *,
        on_lost: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube = kube
        self.settings = settings
        self.identity = identity or default_identity()
        self.on_lost = on_lost
        self.clock = clock
        self.leading = asyncio.Event()
        self._observed: tuple | None = None  # (holder, renewTime, duration) last seen
        self._observed_at = 0.0
        self._renewed_at = 0.0
        self._written: dict | None = None  # the Lease as our last write left it, while leading
        self.transitions = 0

    @property
    def path(self) -> str:
        s = self.settings
        return f"/apis/coordination.k8s.io/v1/namespaces/{s.namespace}/leases/{s.name}"

    async def run(self) -> None:
        while True:
            try:
                # A hung call must not keep a leader admitting after a standby has taken over,
                # nor use up the whole deadline: as client-go, give each attempt half of it.
                await asyncio.wait_for(self.try_acquire_or_renew(), self._attempt_timeout())
            except (KubeError, TimeoutError) as exc:
                log.warning("lease %s: %s", self.settings.name, exc or "timed out")
            if self.leading.is_set() and self.time_left() < 0:
                log.error("lost the lease %s: not renewed in time", self.settings.name)
                self.leading.clear()
                if self.on_lost:
                    self.on_lost()
                return
            await asyncio.sleep(self.settings.retry_period)

    def time_left(self) -> float:
        """Seconds this replica may still act as the leader: until its renew deadline, counted
        from just before its last successful renewal was sent (0 or less: it may not). A
        standby takes the lease only a whole lease duration after it last saw it change, which
        is after that renewal: the difference (5 s by default) covers a write's way to the API
        server."""
        if not self.leading.is_set():
            return 0.0
        return self.settings.renew_deadline - (self.clock() - self._renewed_at)

    def _attempt_timeout(self) -> float:
        timeout = max(self.settings.renew_deadline / 2, 1.0)
        if self.leading.is_set():
            timeout = min(timeout, max(self.time_left(), 0.001))
        return timeout

    def _spec(self, acquire_time: str, transitions: int) -> dict:
        now = micro_time()
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.settings.lease_duration),
            "acquireTime": acquire_time or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    async def try_acquire_or_renew(self) -> bool:
        written, self._written = self._written, None  # used once: a failure reads the Lease
        if self.leading.is_set() and written is not None and await self._renew_written(written):
            return True
        lease = await self.kube.get(self.path)
        now = self.clock()
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.settings.name, "namespace": self.settings.namespace},
                "spec": self._spec("", 0),
            }
            try:
                written = await self.kube.create(self.path.rsplit("/", 1)[0], body)
            except KubeError as exc:
                if exc.conflict:  # someone else created it first
                    return False
                raise
            return self._became_leader(now, written)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"), spec.get("leaseDurationSeconds"))
        if record != self._observed:
            self._observed, self._observed_at = record, now
        duration = float(spec.get("leaseDurationSeconds") or self.settings.lease_duration)
        if holder and holder != self.identity and now - self._observed_at < duration:
            if self.leading.is_set():  # someone took it from us
                self._renewed_at = float("-inf")
            return False
        if (
            holder == self.identity
            and not self.leading.is_set()
            and now - self._observed_at < self.settings.own_lease_grace
        ):
            # Held by an earlier process of this pod (a container restarted after a crash).
            # Its last writes may still be on their way to the store; give them time to land
            # and reach our watches before deciding on what they may have decided.
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        acquire_time = spec.get("acquireTime") or ""
        if holder != self.identity:
            transitions += 1
            acquire_time = ""
        lease["spec"] = self._spec(acquire_time, transitions)
        try:
            written = await self.kube.replace(self.path, lease)  # guarded by its resourceVersion
        except KubeError as exc:
            if exc.conflict:
                return False
            raise
        return self._became_leader(now, written)

    async def _renew_written(self, lease: dict) -> bool:
        """The leader's renewal without a read first, as client-go's: the Lease as our last
        write left it, guarded by its resourceVersion. Anything else wrote it since (or the
        write fails): False, and the caller reads the Lease and decides as usual."""
        now = self.clock()
        spec = lease.get("spec") or {}
        body = {
            **lease,
            "spec": self._spec(
                spec.get("acquireTime") or "", int(spec.get("leaseTransitions") or 0)
            ),
        }
        try:
            written = await self.kube.replace(self.path, body)
        except KubeError as exc:
            log.debug("lease %s: renewal without a read failed (%s); reading it", self.path, exc)
            return False
        return self._became_leader(now, written)

    def _became_leader(self, now: float, written: dict | None) -> bool:
        # Only a reply with a resourceVersion guards the next renewal (see _renew_written).
        version = ((written or {}).get("metadata") or {}).get("resourceVersion")
        self._written = written if version else None
        self._renewed_at = now
        if not self.leading.is_set():
            log.info("acquired the lease %s as %s", self.settings.name, self.identity)
            self.leading.set()
        return True

    async def release(self) -> None:
        """On a clean shutdown: hand the lease back so a standby need not wait for expiry."""
        if not self.leading.is_set():
            return
        self.leading.clear()
        self._written = None
        lease = await self.kube.get(self.path)
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            return
        lease["spec"] = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1}
        try:
            await self.kube.replace(self.path, lease)
        except KubeError as exc:
            log.warning("could not release the lease: %s", exc)
