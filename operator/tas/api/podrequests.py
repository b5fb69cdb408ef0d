"""A pod's effective resource requests, computed the way Kubernetes computes them.

The scheduler reserves, per resource, the larger of what the app containers need together
(plus the sidecars that keep running beside them) and what the heaviest init step needs (an
init container plus the sidecars started before it), then adds the pod overhead. A container
with limits but no requests is charged its limits, as the API server defaults it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tas.api.quantity import resources_to_milli


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
