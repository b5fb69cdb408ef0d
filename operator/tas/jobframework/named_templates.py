"""A Workload's pod sets from an object's named pod templates, each refusal at its field path.

For a kind with several pod templates, each its own pod set (a head and worker groups, a
launcher and workers): the pod sets in order, every template's topology annotations parsed with
Kueue's rules, and the `podset-group-name` groups checked across them. A TopologyRequestError
names the field path of the template's annotations, as Kueue's webhooks do. And each template
started for, or restored from, the pod set of its name in the Workload. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tas.api.annotations import TopologyRequestError, validate_pod_set_groups
from tas.cache.projections import FlavorInfo, WorkloadInfo, workload_from_object
from tas.jobframework import podset
from tas.jobframework.workload import pod_set


@dataclass(frozen=True)
class NamedTemplate:
    name: str  # the pod set's
    count: int
    template: Mapping
    path: str  # of the template, e.g. "spec.headGroupSpec.template"

    @property
    def annotations_path(self) -> str:
        return f"{self.path}.metadata.annotations"


def pod_sets_of(
    templates: Iterable[NamedTemplate], *, pod_index_label: str | None = None
) -> list[dict]:
    """One pod set per template, in order; raises TopologyRequestError naming the path."""
    named = list(templates)
    out = []
    for item in named:
        try:
            out.append(
                pod_set(item.name, item.count, item.template, pod_index_label=pod_index_label)
            )
        except TopologyRequestError as exc:
            raise exc.at(item.annotations_path) from None
    try:
        validate_pod_set_groups(
            workload_from_object({"metadata": {"name": "x"}, "spec": {"podSets": out}}).pod_sets
        )
    except TopologyRequestError as exc:
        raise exc.at(named[exc.podset_index or 0].annotations_path) from None
    return out


def start_patch(
    template: Mapping, name: str, workload: WorkloadInfo, flavors: Mapping[str, FlavorInfo]
) -> dict:
    """The merge patch that readies `template` for the admitted pod set `name` (gate, labels,
    the flavor's node selector and tolerations)."""
    request = next((p for p in workload.pod_sets if p.name == name), None)
    admission = next((a for a in workload.admissions if a.name == name), None)
    flavor = flavors.get(admission.flavor or "") if admission else None
    return podset.start_template(template, name, request, admission, flavor, workload.name)


def restore_patch(template: Mapping, name: str, workload: WorkloadInfo) -> dict | None:
    """The merge patch that gives `template` back as the user wrote it, or None when there is
    nothing to undo. Metadata that held only what the start added goes whole."""
    request = next((p for p in workload.pod_sets if p.name == name), None)
    patch = podset.restore_template(template, request)
    if patch and "metadata" in patch and not podset.merge_patch(template, patch).get("metadata"):
        patch["metadata"] = None
    return patch
