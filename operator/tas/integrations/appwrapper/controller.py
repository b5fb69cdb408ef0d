"""AppWrapper as a GenericJob (jobframework/interface.py), as Kueue's appwrapper_controller.go.

- One pod set per pod set of its components (components.py), in component order, named
  `<appwrapper name>-<n>` (n counts across components), of the pod set's `replicas`, with the
  pod template at its path. Its pods are ranked by the label its pod set's annotation
  `workload.codeflare.dev.appwrapper/tas-pod-index-label` names (inferred for a Job, JobSet
  and PyTorchJob), within sub-groups where a JobSet's pod set names them. A pod set whose path
  leads to no pod template is left out, as Kueue leaves it out.
- Held suspended until admitted; started by writing each component's `podSetInfos` (pod set
  label, Workload annotation, the flavor's node labels and tolerations, the topology gate),
  which the AppWrapper controller merges into the wrapped templates when it creates them, and
  unsuspending. Restored by removing the `podSetInfos`.
- Finished at phase Succeeded, or Failed once its resources are gone (ResourcesDeployed not
  True).
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.api.annotations import TopologyRequestError
from tas.api.constants import (
    PODSET_LABEL,
    PODSET_UNCONSTRAINED_TOPOLOGY,
    TOPOLOGY_SCHEDULING_GATE,
    WORKLOAD_ANNOTATION,
)
from tas.api.frameworks import APPWRAPPER
from tas.cache.projections import FlavorInfo, PodSetAdmission, WorkloadInfo
from tas.integrations.appwrapper.components import (
    POD_INDEX_LABEL_ANNOTATION,
    SUB_GROUP_COUNT_ANNOTATION,
    SUB_GROUP_INDEX_LABEL_ANNOTATION,
    ComponentPodSet,
    PathError,
    component_pod_sets,
    pod_template,
)
from tas.jobframework import workload as framework
from tas.jobframework.interface import Finished, guarded
from tas.jobframework.podset import toleration_to_api
from tas.solver.types import PodSetRequest

COMPONENTS = "spec.components"
# The AppWrapper controller's label on each wrapped object: the AppWrapper's name.
APPWRAPPER_LABEL = "workload.codeflare.dev/appwrapper"


def components(obj: Mapping) -> list[dict]:
    return list((obj.get("spec") or {}).get("components") or [])


def pod_set_name(obj: Mapping, n: int) -> str:
    return f"{obj['metadata']['name']}-{n}"


def admitted_pod_sets(obj: Mapping) -> list[tuple[ComponentPodSet, dict]]:
    """Each component pod set whose path leads to a pod template, with that template."""
    out = []
    for ps in component_pod_sets(obj):
        try:
            out.append((ps, pod_template(components(obj)[ps.component], ps.path)))
        except (PathError, IndexError):
            continue
    return out


def sub_group(ps: ComponentPodSet) -> tuple[str, int] | None:
    label = ps.annotations.get(SUB_GROUP_INDEX_LABEL_ANNOTATION)
    count = ps.annotations.get(SUB_GROUP_COUNT_ANNOTATION)
    try:
        return (label, int(count)) if label and count is not None else None
    except ValueError:
        return None  # Kueue ignores a malformed count


def where(ps: ComponentPodSet) -> str:
    return f"{COMPONENTS}[{ps.component}].{ps.path}.metadata.annotations"


def pod_set_info(
    name: str,
    pod_set: PodSetRequest | None,
    admission: PodSetAdmission | None,
    flavor: FlavorInfo | None,
    workload_name: str,
) -> dict:
    """An AppWrapper podSetInfo, as Kueue's PodSetInfo of an admitted pod set."""
    annotations = {WORKLOAD_ANNOTATION: workload_name}
    info: dict = {"labels": {PODSET_LABEL: name}, "annotations": annotations}
    if admission is not None and admission.assignment is not None:
        if pod_set is not None and pod_set.topology.implied:
            annotations[PODSET_UNCONSTRAINED_TOPOLOGY] = "true"
        info["schedulingGates"] = [{"name": TOPOLOGY_SCHEDULING_GATE}]
    if flavor is not None and flavor.node_labels:
        info["nodeSelector"] = dict(flavor.node_labels)
    if flavor is not None and flavor.tolerations:
        info["tolerations"] = [toleration_to_api(t) for t in flavor.tolerations]
    return info


class _AppWrapper:
    resource = APPWRAPPER

    def pod_sets(self, obj: Mapping) -> list[dict]:
        """A pod set per component pod set; a TopologyRequestError names the template."""
        out = []
        for n, (ps, template) in enumerate(admitted_pod_sets(obj)):
            index_label = ps.annotations.get(POD_INDEX_LABEL_ANNOTATION)
            try:
                out.append(
                    framework.pod_set(
                        pod_set_name(obj, n),
                        ps.replicas,
                        template,
                        pod_index_label=index_label,
                        sub_group=sub_group(ps),
                    )
                )
            except TopologyRequestError as exc:
                raise exc.at(where(ps)) from None
        return out

    def priority(self, obj: Mapping) -> int:
        return max(
            (framework.template_priority(t) for _, t in admitted_pod_sets(obj)),
            default=0,
        )

    def suspended(self, obj: Mapping) -> bool:
        return bool((obj.get("spec") or {}).get("suspend"))

    def finished(self, obj: Mapping) -> Finished | None:
        status = obj.get("status") or {}
        if status.get("phase") == "Succeeded":
            return Finished(True, "AppWrapper finished successfully")
        if status.get("phase") == "Failed" and not any(
            c.get("type") == "ResourcesDeployed" and c.get("status") == "True"
            for c in status.get("conditions") or []
        ):
            return Finished(False, "AppWrapper failed")
        return None

    def start_patch(
        self, obj: Mapping, workload: WorkloadInfo, flavors: Mapping[str, FlavorInfo]
    ) -> dict:
        pod_sets = {p.name: p for p in workload.pod_sets}
        admissions = {a.name: a for a in workload.admissions}
        admitted = {(ps.component, ps.path): n for n, (ps, _) in enumerate(admitted_pod_sets(obj))}
        out = [dict(c) for c in components(obj)]
        for c in out:
            c["podSetInfos"] = []
        for ps in component_pod_sets(obj):
            n = admitted.get((ps.component, ps.path))
            info: dict = {}  # a pod set without a template gets none (the counts must match)
            if n is not None:
                name = pod_set_name(obj, n)
                admission = admissions.get(name)
                flavor = flavors.get(admission.flavor or "") if admission else None
                info = pod_set_info(name, pod_sets.get(name), admission, flavor, workload.name)
            out[ps.component]["podSetInfos"].append(info)
        # A merge patch replaces a list whole: every component goes, as read, infos new.
        return guarded(obj, {"spec": {"suspend": False, "components": out}})

    def stop_patch(self, obj: Mapping) -> dict:
        return guarded(obj, {"spec": {"suspend": True}})

    def restore_patch(self, obj: Mapping, workload: WorkloadInfo) -> dict | None:
        if not self.suspended(obj) or not any(c.get("podSetInfos") for c in components(obj)):
            return None
        out = [{k: v for k, v in c.items() if k != "podSetInfos"} for c in components(obj)]
        return guarded(obj, {"spec": {"components": out}})

    def needs_start_time_reset(self, obj: Mapping) -> bool:
        return False


APP_WRAPPER = _AppWrapper()


def controlled_by_appwrapper(obj: Mapping) -> str | None:
    """The uid of the AppWrapper controlling `obj` (a wrapped resource), if one does: it is
    admitted with its AppWrapper, not on its own."""
    return next(
        (
            o.get("uid")
            for o in (obj.get("metadata") or {}).get("ownerReferences") or []
            if o.get("controller")
            and o.get("kind") == APPWRAPPER.kind
            and (o.get("apiVersion") or "").startswith(APPWRAPPER.group + "/")
        ),
        None,
    )
