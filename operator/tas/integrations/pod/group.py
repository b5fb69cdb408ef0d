"""What a plain pod or a pod group needs next, given its Workload: Kueue's pod controller, pure.

- A pod alone: a Workload of one pod set "main" of 1, owned by the pod.
- A group: a Workload named after the group, created once all `total-count` pods exist (or at
  the first pod, with `pod-group-fast-admission`, for the whole count), one pod set per role,
  owned by every member. Pods beyond the count are deleted (newest first); a failed pod whose
  replacement exists is let go (its finalizer removed); members missing from an admitted group
  are waited for (`WaitingForReplacementPods`).
- Admitted: every gated member is started (its role's pod set: labels, the Workload annotation,
  the flavor's node selector and tolerations; the admission gate removed, the topology gate kept
  for the ungater). Not admitted (or evicted): started members are deleted, as Kueue stops pods.
- Finished: the pod ended; a group when all its pods succeeded (or, when a pod may not be
  retried, when none is left running). Serving groups (StatefulSet, LeaderWorkerSet) never
  finish. Finalizers are removed once the Workload has counted the pods.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tas.api.constants import (
    COND_WAITING_FOR_REPLACEMENT_PODS,
    DEFAULT_PODSET_NAME,
    INT32_MAX,
    IS_GROUP_WORKLOAD_ANNOTATION,
    MANAGED_LABEL,
    POD_GROUP_POD_INDEX_LABEL,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    PREFIX,
)
from tas.api.frameworks import POD
from tas.cache.projections import WorkloadInfo
from tas.integrations.pod import pod as p
from tas.jobframework import workload as framework
from tas.jobframework.interface import Finished
from tas.jobframework.names import workload_name

SINGLE_POD_SET = DEFAULT_PODSET_NAME
MAX_ROLES = 8  # Kueue: "pod group can't include more than 8 roles"


def pod_set_template(pod: Mapping) -> dict:
    """The pod's spec as its pod set's template, without what Kueue or the scheduler added; the
    topology annotations stay, the request is read from them."""
    spec = copy.deepcopy(dict(pod.get("spec") or {}))
    for key in ("schedulingGates", "nodeName"):
        spec.pop(key, None)
    annotations = {k: v for k, v in p.annotations(pod).items() if k.startswith(PREFIX + "podset-")}
    return {"metadata": {"annotations": annotations}, "spec": spec}


def single_workload(
    pod: Mapping,
    *,
    classes: framework.PriorityClasses | None = None,
) -> dict:
    """A pod alone: its Workload, owned by it (raises TopologyRequestError, and
    PriorityClassMissing with `classes`)."""
    meta = p.meta(pod)
    pod_sets = [
        framework.pod_set(
            SINGLE_POD_SET,
            1,
            pod_set_template(pod),
            pod_index_label=POD_GROUP_POD_INDEX_LABEL,
        )
    ]
    return framework.new_workload(
        workload_name(POD.kind, POD.group, meta["name"], meta.get("uid") or ""),
        meta.get("namespace") or "",
        p.queue(pod) or "",
        pod_sets,
        [framework.owner_reference(POD, meta)],
        priority=framework.workload_priority(
            meta, pod_sets, int((pod.get("spec") or {}).get("priority") or 0), classes
        ),
        labels={framework.JOB_UID_LABEL: meta["uid"]} if meta.get("uid") else None,
    )


def single_finished(pod: Mapping) -> Finished | None:
    if not p.terminal(pod):
        return None
    message = (pod.get("status") or {}).get("message") or ""
    return Finished(p.phase(pod) == "Succeeded", message or f"Pod {p.phase(pod).lower()}")


# ---- groups -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    namespace: str
    name: str  # the group name label
    workload: str  # its Workload's name
    pods: tuple[Mapping, ...]  # every member still there, finalized or not

    @property
    def first(self) -> Mapping:
        return min(self.pods, key=lambda pod: (pod_time(pod), p.meta(pod)["name"]))

    @property
    def total(self) -> int | None:
        return p.total_count(self.first)

    @property
    def serving(self) -> bool:
        return p.serving(self.first)

    @property
    def fast(self) -> bool:
        return p.fast_admission(self.first)

    @property
    def prebuilt(self) -> bool:
        return self.workload != self.name

    def active(self) -> list[Mapping]:
        return [pod for pod in self.pods if p.runnable_or_succeeded(pod)]

    def inactive(self) -> list[Mapping]:
        return [pod for pod in self.pods if not p.runnable_or_succeeded(pod)]


def pod_time(pod: Mapping) -> str:
    return p.meta(pod).get("creationTimestamp") or ""


def problem(group: Group) -> str | None:
    """Why the group cannot be admitted as it is (Kueue's validatePodGroupMetadata)."""
    first = group.first
    total = group.total
    if total is None:
        return (
            f"pod group {group.name!r}: {POD_GROUP_TOTAL_COUNT_ANNOTATION} of pod "
            f"{p.meta(first)['name']!r} must be a whole number from 1 to {INT32_MAX}"
        )
    for pod in group.pods:
        if p.phase(pod) == "Failed":
            continue
        if p.queue(pod) != p.queue(first):
            return (
                f"pods {p.meta(first)['name']!r} and {p.meta(pod)['name']!r} have different "
                f"queue names: {p.queue(first)}!={p.queue(pod)}"
            )
        if p.total_count(pod) != total:
            return (
                f"pods {p.meta(first)['name']!r} and {p.meta(pod)['name']!r} have different "
                f"total counts: {total}!={p.total_count(pod)}"
            )
    return None


def roles(pods: Iterable[Mapping]) -> dict[str, list[Mapping]]:
    out: dict[str, list[Mapping]] = defaultdict(list)
    for pod in pods:
        out[p.role(pod)].append(pod)
    return dict(sorted(out.items()))


def group_pod_sets(
    group: Group,
) -> list[dict]:
    """One pod set per role of the active pods (sorted by role), counted; with fast admission
    the first runnable pod's role for the whole count. Raises TopologyRequestError.

    Each role is (count, its first pod): the total count is the group author's number, so
    nothing here is built per pod it counts."""
    active = sorted(group.active(), key=lambda pod: (pod_time(pod), p.meta(pod)["name"]))
    if group.fast:
        members = {p.role(active[0]): (group.total or 1, active[0])}
    else:
        members = {name: (len(pods), pods[0]) for name, pods in roles(active).items()}
    return [
        framework.pod_set(
            name,
            count,
            pod_set_template(first),
            pod_index_label=POD_GROUP_POD_INDEX_LABEL,
        )
        for name, (count, first) in members.items()
    ]


def group_owners(pods: Iterable[Mapping]) -> list[dict]:
    return [framework.owner_reference(POD, p.meta(pod), controller=False) for pod in pods]


def group_workload(
    group: Group,
    *,
    classes: framework.PriorityClasses | None = None,
) -> dict:
    first = group.first
    pod_sets = group_pod_sets(
        group,
    )
    return framework.new_workload(
        group.workload,
        group.namespace,
        p.queue(first) or "",
        pod_sets,
        group_owners(group.active()),
        priority=framework.workload_priority(
            p.meta(first), pod_sets, int((first.get("spec") or {}).get("priority") or 0), classes
        ),
        annotations={IS_GROUP_WORKLOAD_ANNOTATION: "true"},
    )


def group_finished(group: Group) -> Finished | None:
    """Kueue's rule (its message too; Kueue reports a group's end as a success either way)."""
    if group.serving or group.total is None:
        return None
    succeeded = sum(1 for pod in group.pods if p.phase(pod) == "Succeeded")
    running = any(not p.terminal(pod) for pod in group.pods)
    unretriable = any(p.unretriable(pod) for pod in group.pods)
    if succeeded == group.total or (not running and unretriable):
        return Finished(True, f"Pods succeeded: {succeeded}/{group.total}.")
    return None


def keep_order(pod: Mapping) -> tuple:
    """Kueue's sortActivePods: members to keep first (finalized ones last, gated ones after
    started ones, older before newer)."""
    return (p.finalized(pod), p.admission_gated(pod), pod_time(pod), p.meta(pod)["name"])


@dataclass
class Reconcile:
    """What to do for a group whose Workload exists."""

    owners_to_add: list[Mapping] = field(default_factory=list)  # active pods not owners yet
    excess: list[Mapping] = field(default_factory=list)  # finalize and delete
    replaced: list[Mapping] = field(default_factory=list)  # inactive pods to finalize
    absent: int = 0  # members missing from the Workload's counts


def reconcile(group: Group, workload: WorkloadInfo) -> Reconcile:
    """Members against the Workload's pod sets (Kueue's FindMatchingWorkloads)."""
    out = Reconcile()
    active, inactive = roles(group.active()), roles(group.inactive())
    counts = {ps.name: ps.count for ps in workload.pod_sets}
    for name, count in counts.items():
        role_active = sorted(active.get(name, []), key=keep_order)
        role_inactive = inactive.get(name, [])
        out.absent += max(count - len(role_active), 0)
        out.excess += role_active[count:]
        kept = role_active[:count]
        out.owners_to_add += [
            pod for pod in kept if p.meta(pod).get("uid") not in workload.owner_uids
        ]
        replaceable = min(len(role_inactive), len(role_inactive) + len(role_active) - count)
        if replaceable > 0:
            out.replaced += sorted(role_inactive, key=pod_time)[:replaceable]
    for name, pods in active.items():  # a role the Workload does not have: not admitted
        if name not in counts:
            out.excess += pods
    return out


def waiting_condition(workload: WorkloadInfo, absent: int) -> tuple[bool, str, str] | None:
    """WaitingForReplacementPods as Kueue sets it: (status, reason, message), None if unchanged."""
    current = workload.condition(COND_WAITING_FOR_REPLACEMENT_PODS)
    if current is None and not absent:
        return None
    if absent:
        evicted = workload.condition("Evicted")
        if evicted and evicted.get("status") == "True":
            wanted = (True, evicted.get("reason") or "", evicted.get("message") or "")
        else:
            wanted = (True, "PodsFailed", "Some Failed pods need replacement")
    else:
        wanted = (False, "PodsReady", "No pods need replacement")
    if (
        current
        and (current.get("status") == "True", current.get("reason"), current.get("message"))
        == wanted
    ):
        return None
    return wanted


def managed(pods: Sequence[Mapping]) -> list[Mapping]:
    return [pod for pod in pods if p.labels(pod).get(MANAGED_LABEL) == "true"]
