"""A pod's effective resource requests, computed the way Kubernetes computes them.

The scheduler reserves, per resource, the larger of what the app containers need together
(plus the sidecars that keep running beside them) and what the heaviest init step needs (an
init container plus the sidecars started before it), then adds the pod overhead. A container
with limits but no requests is charged its limits, as the API server defaults it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tas.api.quantity import resources_to_milli
from tas.solver.types import NumaShape


def _container_requests(container: Mapping) -> dict[str, int]:
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    return resources_to_milli(merged)


def _add(total: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, 0) + value


def _max(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, value in other.items():
        total[name] = max(total.get(name, 0), value)


def _is_sidecar(container: Mapping) -> bool:
    return container.get("restartPolicy") == "Always"


def pod_requests(spec: Mapping) -> dict[str, int]:
    """Requests of one pod in milli-units (without the implicit 1 "pods")."""
    app: dict[str, int] = {}
    for container in spec.get("containers") or []:
        _add(app, _container_requests(container))

    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in _init_containers(spec):
        requests = _container_requests(container)
        if _is_sidecar(container):
            _add(sidecars, requests)
            _max(init_peak, sidecars)
        else:
            step = dict(sidecars)
            _add(step, requests)
            _max(init_peak, step)
    _add(app, sidecars)
    _max(app, init_peak)

    _add(app, resources_to_milli(spec.get("overhead") or {}))
    return {name: value for name, value in app.items() if value}


def _init_containers(spec: Mapping) -> Iterable[Mapping]:
    return spec.get("initContainers") or []


def _guaranteed(container: Mapping) -> bool:
    """Kubernetes' Guaranteed rule for one container: cpu and memory limits set, and requests
    (defaulted to the limits) equal to them."""
    resources = container.get("resources") or {}
    limits = resources_to_milli(resources.get("limits") or {})
    requests = _container_requests(container)
    for name in ("cpu", "memory"):
        if not limits.get(name) or requests.get(name) != limits[name]:
            return False
    # every other request must equal its limit too (extended resources always do)
    return all(limits.get(name, value) == value for name, value in requests.items())


def numa_shape(spec: Mapping) -> NumaShape | None:
    """What the kubelet's Topology Manager pins to NUMA zones, for a pod whose every container
    is Guaranteed and whose app containers and sidecars ask for whole CPUs (the CPU manager's
    exclusive CPUs); None for any other pod, which keeps node totals. Plain init containers run
    before the rest and hand their CPUs on, so they are not counted."""
    containers = list(spec.get("containers") or [])
    inits = list(_init_containers(spec))
    if not containers or not all(_guaranteed(c) for c in [*inits, *containers]):
        return None
    pinned = [c for c in inits if _is_sidecar(c)] + containers
    shapes = tuple(_container_requests(c) for c in pinned)
    if any(shape.get("cpu", 0) % 1000 for shape in shapes):
        return None
    return NumaShape(shapes, tuple(str(c.get("name") or "") for c in pinned))
