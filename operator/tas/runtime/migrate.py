"""Storage-version migration: every object of our CRDs rewritten in the stored version (v1beta2),
then each CRD's `status.storedVersions` trimmed to it, as Kueue's hack/migrate-to-v1beta2.sh
and the Kubernetes storage-version migrator do.

Why: a CRD may only drop a version once no object is stored in it, and the API server keeps
every version ever stored in `status.storedVersions`. After `helm upgrade` from a chart that
stored v1beta1, or on a cluster where Kueue v0.16+ ran, the objects written before stay in
their old encoding until rewritten. Reading them in v1beta2 then needs the conversion webhook.

How: an empty merge patch per object. The API server decodes the stored object, encodes it in
the storage version, and writes it only when the bytes differ, so an object already stored in
v1beta2 is not written again. A CRD's storedVersions is trimmed only after every object listed
was patched (an object made meanwhile is written in the storage version anyway).

Run by the leader once after it starts (when a CRD lists an older stored version), and by
`tas migrate-storage`.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from tas.api import kinds
from tas.kube import CRDS, MERGE, Kube, KubeError

log = logging.getLogger(__name__)

PAGE = 500  # objects per list request
YIELD_EVERY = 50  # patches between yields, so the loop stays responsive


@dataclass(frozen=True)
class Target:
    crd: str  # the CRD's name, e.g. workloads.kueue.x-k8s.io
    collection: str  # the API path listing every object, in the storage version
    storage_version: str


@dataclass
class Report:
    rewritten: dict[str, int] = field(default_factory=dict)  # CRD name -> objects patched
    trimmed: dict[str, list[str]] = field(default_factory=dict)  # CRD -> versions dropped

    def lines(self) -> list[str]:
        out = [f"{crd}: {n} objects rewritten" for crd, n in self.rewritten.items()]
        out += [
            f"{crd}: storedVersions no longer lists {', '.join(v)}"
            for crd, v in self.trimmed.items()
        ]
        return out or ["every CRD already stores only its storage version"]


def targets() -> list[Target]:
    """Every CRD we serve."""
    return [
        Target(crd=r.crd_name, collection=r.collection(), storage_version=r.version)
        for r in kinds.ALL
    ]


async def stale_versions(kube: Kube, target: Target) -> list[str]:
    """The versions other than the storage version the CRD says objects may be stored in."""
    crd = await kube.get(f"{CRDS}/{target.crd}")
    stored = ((crd or {}).get("status") or {}).get("storedVersions") or []
    return [v for v in stored if v != target.storage_version]


async def migrate(kube: Kube, only: list[Target] | None = None) -> Report:
    """Rewrite and trim every CRD that still lists an older stored version."""
    report = Report()
    for target in only or targets():
        stale = await stale_versions(kube, target)
        if not stale:
            continue
        report.rewritten[target.crd] = await _rewrite_all(kube, target)
        await kube.patch(
            f"{CRDS}/{target.crd}/status",
            {"status": {"storedVersions": [target.storage_version]}},
            MERGE,
        )
        report.trimmed[target.crd] = stale
        log.info("%s: every object stored in %s", target.crd, target.storage_version)
    return report


async def _rewrite_all(kube: Kube, target: Target) -> int:
    done, token = 0, None
    while True:
        params = {"limit": str(PAGE), **({"continue": token} if token else {})}
        page = await kube.request("GET", target.collection, params=params)
        for obj in page.get("items") or []:
            await _rewrite(kube, target, obj)
            done += 1
            if done % YIELD_EVERY == 0:
                await asyncio.sleep(0)
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return done


async def _rewrite(kube: Kube, target: Target, obj: dict) -> None:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    group_version, plural = target.collection.rsplit("/", 1)
    scope = f"/namespaces/{namespace}" if namespace else ""
    try:
        await kube.patch(f"{group_version}{scope}/{plural}/{meta['name']}", {}, MERGE)
    except KubeError as exc:
        if not exc.not_found:  # deleted meanwhile: nothing to migrate
            raise
