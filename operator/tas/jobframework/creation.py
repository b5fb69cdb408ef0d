"""Creating an owner's Workload, as every integration does it.

The webhooks refuse what the Workload CRD would (api/constants.py holds the limits both use), but
an owner can still ask for a Workload the API server refuses: one created while the webhooks
were away, or one whose numbers add up past a limit (a JobSet's replicas x parallelism over
int32). Its owner would then wait suspended with nothing said: it gets a Warning event instead,
with the API server's reason.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from tas.api.annotations import TopologyRequestError
from tas.api.constants import (
    REASON_ERR_WORKLOAD_COMPOSE,
    REASON_INVALID_TOPOLOGY_REQUEST,
    REASON_PRIORITY_CLASS_NOT_FOUND,
)
from tas.jobframework.interface import ReferenceMissing
from tas.jobframework.priority import PriorityClassMissing
from tas.kube import Kube, KubeError, Ref, kueue_path

log = logging.getLogger(__name__)

REFUSED = (400, 422)  # the request itself is wrong: sending it again changes nothing

# Why an owner's Workload could not be built, said in a Warning event on the owner. The
# validating webhooks refuse a bad topology request, but an object can slip past them; a
# Workload naming a missing priority class, or built from a missing object (a TrainJob's
# runtime), is built once it appears (its watch syncs the owners again).
NOT_BUILT = (TopologyRequestError, PriorityClassMissing, ReferenceMissing)


def not_built_reason(exc: Exception) -> str:
    """The event reason for one of NOT_BUILT."""
    if isinstance(exc, TopologyRequestError):
        return REASON_INVALID_TOPOLOGY_REQUEST
    if isinstance(exc, ReferenceMissing):
        return REASON_ERR_WORKLOAD_COMPOSE  # Kueue's reason when it cannot build the pod sets
    return REASON_PRIORITY_CLASS_NOT_FOUND


async def create_workload(kube: Kube, workload: Mapping, owner: Ref, what: str) -> bool:
    """Create `workload` for `owner` (`what` names the owner in the log). True when it was
    created or already exists; False when the API server refused it (the owner got an event)
    or its namespace is being deleted.
    Other errors are raised, for the caller's retry."""
    meta = workload["metadata"]
    try:
        await kube.create(kueue_path("workloads", meta["namespace"]), workload)
    except KubeError as exc:
        if exc.conflict:  # already there: the watch will show it
            return True
        if exc.namespace_terminating:  # the owner goes with its namespace; nothing to say
            log.debug("workload %s for %s: its namespace is being deleted", meta["name"], what)
            return False
        if exc.status not in REFUSED:
            raise
        await kube.event(
            owner,
            "Warning",
            REASON_ERR_WORKLOAD_COMPOSE,
            f"Workload {meta['name']} was refused by the API server: {exc.message}",
        )
        log.warning("workload %s for %s refused: %s", meta["name"], what, exc)
        return False
    log.info("created workload %s for %s", meta["name"], what)
    return True
