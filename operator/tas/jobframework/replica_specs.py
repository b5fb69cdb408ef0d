"""A GenericJob for kinds that run a map of replica types (Kueue's kubeflowjob.KubeflowJob).

The Kubeflow training jobs share one shape: `spec.<field>` maps a replica type ("Master",
"Worker", ...) to `{replicas, template}`; `spec.runPolicy.suspend` holds them, and
`spec.runPolicy.schedulingPolicy.priorityClass` may name their PriorityClass; they end at a
`Succeeded` or `Failed` condition. Each kind gives its field, its replica types in Kueue's
order and the label that ranks its pods; everything else is here.

- One pod set per replica type present, in that order, named after it in lower case, of
  `replicas` pods (default 1). Types outside the kind's list are not Kueue's pod sets either.
- Started by rewriting each replica type's template (the training operator creates the pods
  from it once unsuspended) and setting `runPolicy.suspend` to false; a merge patch merges the
  map, so only the templates change. Restored once suspended again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tas.api.annotations import TopologyRequestError, validate_pod_set_groups
from tas.api.constants import REPLICA_INDEX_LABEL
from tas.api.frameworks import Resource
from tas.cache.projections import FlavorInfo, WorkloadInfo, workload_from_object
from tas.jobframework import named_templates, podset
from tas.jobframework import workload as framework
from tas.jobframework.interface import Finished, guarded

PRIORITY_CLASS_FIELD = "spec.runPolicy.schedulingPolicy.priorityClass"


def pod_set_name(replica_type: str) -> str:
    return replica_type.lower()  # Kueue's NewPodSetReference


def replica_count(replica_spec: Mapping) -> int:
    value = replica_spec.get("replicas")
    return 1 if value is None else int(value)


def template(replica_spec: Mapping) -> dict:
    return replica_spec.get("template") or {}


def run_policy(obj: Mapping) -> Mapping:
    return (obj.get("spec") or {}).get("runPolicy") or {}


@dataclass(frozen=True)
class ReplicaSpecsJob:
    """The GenericJob of one kind: its resource, `spec.<field>`, its replica types in Kueue's
    order, and the label holding a pod's index within its replica type."""

    resource: Resource
    field: str
    replica_types: tuple[str, ...]
    rank_label: str = REPLICA_INDEX_LABEL

    def replica_specs(self, obj: Mapping) -> list[tuple[str, Mapping]]:
        """(replica type, its spec) for each type of the kind's order that the object has."""
        specs = (obj.get("spec") or {}).get(self.field) or {}
        return [(t, specs[t]) for t in self.replica_types if specs.get(t) is not None]

    def annotations_path(self, replica_type: str) -> str:
        return f"spec.{self.field}[{replica_type}].template.metadata.annotations"

    def pod_sets(self, obj: Mapping) -> list[dict]:
        """One pod set per replica type; a TopologyRequestError names the replica type's
        template annotations."""
        out = []
        for replica_type, spec in self.replica_specs(obj):
            out.append(self._pod_set(replica_type, spec))
        self._check_groups(obj, out)
        return out

    def validate(self, obj: Mapping) -> list[str]:
        """Every replica type's topology annotations (one reason per bad template, as Kueue
        lists a field error per replica type), then the pod-set groups across them."""
        reasons, out = [], []
        for replica_type, spec in self.replica_specs(obj):
            try:
                out.append(self._pod_set(replica_type, spec))
            except TopologyRequestError as exc:
                reasons.append(str(exc))
        if reasons:
            return reasons
        try:
            self._check_groups(obj, out)
        except TopologyRequestError as exc:
            return [str(exc)]
        return []

    def _pod_set(self, replica_type: str, spec: Mapping) -> dict:
        try:
            return framework.pod_set(
                pod_set_name(replica_type),
                replica_count(spec),
                template(spec),
                pod_index_label=self.rank_label,
            )
        except TopologyRequestError as exc:
            raise exc.at(self.annotations_path(replica_type)) from None

    def _check_groups(self, obj: Mapping, pod_sets: list[dict]) -> None:
        """podset-group-name across the replica types (a launcher and its workers)."""
        try:
            validate_pod_set_groups(
                workload_from_object(
                    {"metadata": {"name": "x"}, "spec": {"podSets": pod_sets}}
                ).pod_sets
            )
        except TopologyRequestError as exc:
            replica_type = self.replica_specs(obj)[exc.podset_index or 0][0]
            raise exc.at(self.annotations_path(replica_type)) from None

    def priority(self, obj: Mapping) -> int:
        return max(
            (framework.template_priority(template(s)) for _, s in self.replica_specs(obj)),
            default=0,
        )

    def priority_class(self, obj: Mapping) -> tuple[str, str] | None:
        """runPolicy's PriorityClass; the templates' come next (jobframework.priority)."""
        name = (run_policy(obj).get("schedulingPolicy") or {}).get("priorityClass")
        return (name, PRIORITY_CLASS_FIELD) if name else None

    def suspended(self, obj: Mapping) -> bool:
        return bool(run_policy(obj).get("suspend"))

    def suspend_patch(self, obj: Mapping) -> dict:
        """The webhook's: a queued object is created suspended."""
        return {} if self.suspended(obj) else {"spec": {"runPolicy": {"suspend": True}}}

    def finished(self, obj: Mapping) -> Finished | None:
        for cond in (obj.get("status") or {}).get("conditions") or []:
            if cond.get("status") != "True" or cond.get("type") not in ("Succeeded", "Failed"):
                continue
            succeeded = cond["type"] == "Succeeded"
            default = f"{self.resource.kind} {'succeeded' if succeeded else 'failed'}"
            return Finished(succeeded, cond.get("message") or cond.get("reason") or default)
        return None

    def start_patch(
        self, obj: Mapping, workload: WorkloadInfo, flavors: Mapping[str, FlavorInfo]
    ) -> dict:
        templates = {
            replica_type: {
                "template": named_templates.start_patch(
                    template(spec), pod_set_name(replica_type), workload, flavors
                )
            }
            for replica_type, spec in self.replica_specs(obj)
        }
        return guarded(obj, {"spec": {"runPolicy": {"suspend": False}, self.field: templates}})

    def stop_patch(self, obj: Mapping) -> dict:
        return guarded(obj, {"spec": {"runPolicy": {"suspend": True}}})

    def restore_patch(self, obj: Mapping, workload: WorkloadInfo) -> dict | None:
        if not self.suspended(obj):
            return None
        pod_sets = {p.name: p for p in workload.pod_sets}
        templates = {}
        for replica_type, spec in self.replica_specs(obj):
            patch = podset.restore_template(
                template(spec), pod_sets.get(pod_set_name(replica_type))
            )
            if patch is not None:
                templates[replica_type] = {"template": patch}
        return guarded(obj, {"spec": {self.field: templates}}) if templates else None

    def needs_start_time_reset(self, obj: Mapping) -> bool:
        return False  # the training operators create the pods themselves, from the templates
