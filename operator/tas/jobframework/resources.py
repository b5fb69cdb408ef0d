"""A pod template's requests as its pods will have them (Kueue's workload.AdjustResources).

The API server changes a pod at creation in ways its template does not show: the RuntimeClass
admission plugin sets `spec.overhead` from the class named by `runtimeClassName`, and the
LimitRanger fills in the limits and requests a container leaves unset from the namespace's
LimitRanges. A Workload built from the bare template would be charged less than its pods take,
so, as Kueue does, both are folded into the Workload's pod set templates when it is built.

Kueue fills in the LimitRange requests before taking a container's limits as its requests; the
API server takes the limits first (pod defaulting precedes admission), so a container with a
limit but no request gets its limit, not the default request. We follow the API server: the
Workload asks for what the pods will ask for.

Pure: templates in, templates out.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from tas.cache.projections import ContainerDefaults, PodDefaults


def _container(container: Mapping, defaults: ContainerDefaults) -> dict:
    out = dict(container)
    resources = dict(out.get("resources") or {})
    limits = dict(resources.get("limits") or {})
    # Pod defaulting: a limit without a request is also the request.
    requests = {**limits, **(resources.get("requests") or {})}
    limits = {**defaults.limits, **limits}
    requests = {**defaults.requests, **requests}
    if limits:
        resources["limits"] = limits
    if requests:
        resources["requests"] = requests
    if resources:
        out["resources"] = resources
    return out


def pod_spec_with_defaults(spec: Mapping, defaults: PodDefaults) -> dict:
    """`spec` as the API server would create a pod of it in the defaults' namespace."""
    out = copy.deepcopy(dict(spec))
    runtime_class = out.get("runtimeClassName")
    overhead = defaults.overheads.get(runtime_class) if runtime_class else None
    if overhead and not out.get("overhead"):
        out["overhead"] = dict(overhead)
    containers = defaults.containers
    if not containers.limits and not containers.requests:
        return out
    for kind in ("initContainers", "containers"):
        if out.get(kind):
            out[kind] = [
                _container(c, containers) if isinstance(c, Mapping) else c for c in out[kind]
            ]
    return out


def with_pod_defaults(pod_sets: list[dict], defaults: PodDefaults | None) -> list[dict]:
    """Workload pod sets whose templates carry what the API server adds to their pods."""
    if defaults is None or defaults == PodDefaults():
        return pod_sets  # nothing to add: the Workload stays as written
    out = []
    for ps in pod_sets:
        template = dict(ps["template"])
        template["spec"] = pod_spec_with_defaults(template.get("spec") or {}, defaults)
        out.append({**ps, "template": template})
    return out
