"""LeaderWorkerSet (leaderworkerset.x-k8s.io/v1), as Kueue's pkg/controller/jobs/leaderworkerset.

Each group (one leader and its workers) is one Workload, created by the operator for every
group index below `replicas` (`leaderworkerset-<name>-<index>-<hash>`), owned by the
LeaderWorkerSet, with two pod sets: "leader" (1 pod) and "worker" (`size - 1`), or "main"
(`size`) without a leader template. Both pod templates' topology annotations are honoured;
`podset-group-name` on both places the leader in the domain of its workers. Workers are ranked
by their worker index, the leader first.

The LeaderWorkerSet's pod templates are marked by the webhook, so that its pods are gated at
creation (integrations/pod/webhook.py); once a pod carries its group index the operator labels it a member
of its group's Workload (the group name, the prebuilt Workload, the total count and its role),
and the pod integration admits, starts and keeps it. Scaling `replicas` up creates the new
groups' Workloads; scaling down deletes those of the groups gone (their pods go with them).
A serving group never finishes.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.api.annotations import TopologyRequestError, validate_pod_set_groups
from tas.api.constants import (
    DEFAULT_PODSET_NAME,
    INT32_MAX,
    IS_GROUP_WORKLOAD_ANNOTATION,
    LWS_WORKER_INDEX_LABEL,
    POD_GROUP_NAME_LABEL,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    PREBUILT_WORKLOAD_LABEL,
    ROLE_HASH_ANNOTATION,
)
from tas.api.frameworks import LEADERWORKERSET
from tas.cache.projections import PodDefaults, workload_from_object
from tas.jobframework import workload as framework
from tas.jobframework.names import workload_name
from tas.jobframework.resources import with_pod_defaults

NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
LEADER_NAME_ANNOTATION = "leaderworkerset.sigs.k8s.io/leader-name"  # on workers only
LEADER, WORKER, MAIN = "leader", "worker", DEFAULT_PODSET_NAME
TEMPLATES = "spec.leaderWorkerTemplate"


def templates(lws: Mapping) -> Mapping:
    return (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}


def leader_template(lws: Mapping) -> Mapping | None:
    return templates(lws).get("leaderTemplate")


def worker_template(lws: Mapping) -> Mapping:
    return templates(lws).get("workerTemplate") or {}


def _whole(value: object, default: int) -> int | None:
    """A count as the API gives it (None: the default); None when it is not a whole number."""
    if value is None:
        return default
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def size(lws: Mapping) -> int:
    """Pods per group (bound_problems says when it is not a usable number)."""
    return _whole(templates(lws).get("size"), 1) or 1


def replicas(lws: Mapping) -> int:
    """Groups, one Workload each (bound_problems says when it is not a usable number)."""
    return _whole((lws.get("spec") or {}).get("replicas"), 1) or 0


def bound_problems(lws: Mapping, max_replicas: int, old: Mapping | None = None) -> list[str]:
    """Why the operator will not make this object's Workloads: `replicas` beyond
    `max_replicas` (each is a Workload to name, create and keep), or a `size` that is no pod
    set's count. On an update only a number that grew is refused, so that an object over a
    bound lowered since can still be scaled down, relabelled and deleted."""
    spec = lws.get("spec") or {}
    old_spec = (old or {}).get("spec") or {}
    out = []
    count = _whole(spec.get("replicas"), 1)
    before = _whole(old_spec.get("replicas"), 1)
    grew = old is None or before is None or (count or 0) > before
    if count is None or count < 0 or (count > max_replicas and grew):
        out.append(
            f"spec.replicas: Invalid value: {spec.get('replicas')!r}: must be a whole number "
            f"from 0 to {max_replicas} (the operator's --max-leaderworkerset-replicas)"
        )
    pods = _whole(templates(lws).get("size"), 1)
    if pods is None or not 1 <= pods <= INT32_MAX:
        out.append(
            f"{TEMPLATES}.size: Invalid value: {templates(lws).get('size')!r}: must be a whole "
            f"number from 1 to {INT32_MAX}"
        )
    return out


def group_workload_name(lws: Mapping, group_index: int | str) -> str:
    meta = lws.get("metadata") or {}
    return workload_name(
        LEADERWORKERSET.kind,
        LEADERWORKERSET.group,
        f"{meta.get('name', '')}-{group_index}",
        meta.get("uid") or "",
    )


def pod_sets(
    lws: Mapping,
) -> list[dict]:
    """leader (1) and worker (size - 1), or main (size); a TopologyRequestError names the
    template."""
    out = []
    leader = leader_template(lws)
    if leader is not None:
        try:
            out.append(
                framework.pod_set(
                    LEADER,
                    1,
                    leader,
                )
            )
        except TopologyRequestError as exc:
            raise exc.at(f"{TEMPLATES}.leaderTemplate.metadata.annotations") from None
    name, count = (WORKER, size(lws) - 1) if leader is not None else (MAIN, size(lws))
    try:
        out.append(
            framework.pod_set(
                name,
                count,
                worker_template(lws),
                pod_index_label=LWS_WORKER_INDEX_LABEL,
            )
        )
    except TopologyRequestError as exc:
        raise exc.at(f"{TEMPLATES}.workerTemplate.metadata.annotations") from None
    try:
        validate_pod_set_groups(
            workload_from_object({"metadata": {"name": "x"}, "spec": {"podSets": out}}).pod_sets,
        )
    except TopologyRequestError as exc:
        which = (
            "leaderTemplate" if out[exc.podset_index or 0]["name"] == LEADER else "workerTemplate"
        )
        raise exc.at(f"{TEMPLATES}.{which}.metadata.annotations") from None
    return out


def group_workload(
    lws: Mapping,
    group_index: int,
    *,
    classes: framework.PriorityClasses | None = None,
    defaults: PodDefaults | None = None,
) -> dict:
    """One group's Workload; with the namespace's `defaults`, its templates ask for what the
    API server will give the pods (LimitRange defaults, RuntimeClass overhead)."""
    meta = lws["metadata"]
    sets = pod_sets(
        lws,
    )
    sets = with_pod_defaults(sets, defaults)
    return framework.new_workload(
        group_workload_name(lws, group_index),
        meta.get("namespace") or "",
        framework.queue_name(lws) or "",
        sets,
        [framework.owner_reference(LEADERWORKERSET, meta, controller=False)],
        priority=framework.workload_priority(
            meta, sets, framework.template_priority(worker_template(lws)), classes
        ),
        annotations={IS_GROUP_WORKLOAD_ANNOTATION: "true"},
    )


def pod_membership(pod: Mapping, lws: Mapping) -> dict | None:
    """The merge patch that makes a LeaderWorkerSet's pod a member of its group's Workload
    (Kueue's LeaderWorkerSet pod reconciler), or None while it waits for its group index."""
    meta = pod.get("metadata") or {}
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    index = labels.get(GROUP_INDEX_LABEL)
    if index is None or labels.get(POD_GROUP_NAME_LABEL):
        return None
    name = group_workload_name(lws, index)
    role = MAIN
    if leader_template(lws) is not None:
        role = WORKER if LEADER_NAME_ANNOTATION in annotations else LEADER
    return {
        "metadata": {
            "resourceVersion": meta.get("resourceVersion"),
            "labels": {POD_GROUP_NAME_LABEL: name, PREBUILT_WORKLOAD_LABEL: name},
            "annotations": {
                POD_GROUP_TOTAL_COUNT_ANNOTATION: str(size(lws)),
                ROLE_HASH_ANNOTATION: role,
            },
        }
    }
