"""The topology view as HTML: the whole page, and the parts an update replaces by id.

A part is one element of the page with a stable id (a rack of hosts, a block's header, a
flavor's free-capacity table, the workload lists). `parts(view)` names each with the model data
it is drawn from, so the publisher can tell which changed by comparing data, and render only
those (`render_part`), sent as htmx out-of-band swaps.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jinja2
from markupsafe import Markup

from tas.solver.types import Resources
from tas.view.model import ClusterView, DomainView, FlavorView, HostView, summed
from tas.view.words import short_level

# The resource a host's bar is drawn in: the first of these its flavor's nodes have.
BAR_RESOURCES = ("nvidia.com/gpu", "cpu", "pods")
TOPOLOGY_ID = "topology"  # replaced whole when flavors, levels or domains come or go
_MEMORY = ("memory", "ephemeral-storage")
_GIB = 1 << 30


def workload_colour(key: str) -> str:
    """A workload's colour, the same in every viewer and after every restart (a hash of its
    key to a hue; Python's own hash changes per process)."""
    return f"hsl({zlib.crc32(key.encode()) % 360} 65% 55%)"


def element_id(kind: str, *parts: str) -> str:
    """`kind/part/part`: node names, flavor names and label values never hold a slash."""
    return "/".join((kind, *parts))


def quantity(resource: str, milli: int) -> str:
    """A milli-unit amount as a person reads it: cpu in cores, memory in Gi, others in units."""
    if resource in _MEMORY:
        return f"{milli / 1000 / _GIB:.3g}Gi"
    units = milli / 1000
    return f"{units:g}" if units == int(units) or units >= 100 else f"{units:.2g}"


def resources_text(resources: Resources) -> str:
    shown = [(r, v) for r, v in sorted(resources.items()) if v and r != "pods"]
    return ", ".join(f"{r} {quantity(r, v)}" for r, v in shown) or "nothing"


def bar_resource(flavor: FlavorView) -> str:
    present = {r for host in hosts_of(flavor.domains) for r, v in host.allocatable.items() if v}
    return next((r for r in BAR_RESOURCES if r in present), "pods")


def hosts_of(domains: tuple[DomainView, ...]) -> Iterator[HostView]:
    for domain in domains:
        yield from domain.hosts
        yield from hosts_of(domain.domains)


@dataclass(frozen=True)
class Segment:
    workload: str | None  # None: pods outside topology-aware admission
    percent: float
    title: str


def segments(host: HostView, resource: str) -> list[Segment]:
    """A host's bar: one segment per use, in the share of `resource` it holds."""
    total = host.allocatable.get(resource, 0)
    out = []
    for use in host.uses:
        share = use.requests.get(resource, 0)
        percent = 100.0 * share / total if total else 0.0
        who = use.workload or "other pods"
        title = f"{who}: {use.pods} pods, {resources_text(use.requests)}"
        out.append(Segment(use.workload, round(min(percent, 100.0), 2), title))
    return out


@dataclass(frozen=True)
class LevelFree:
    """A flavor's free capacity at one level: in all, and in its emptiest domain (what one
    domain-required gang can use at most)."""

    level: str
    domains: int
    total: Resources
    most: Resources


def free_by_level(flavor: FlavorView) -> tuple[LevelFree, ...]:
    by_level: dict[str, list[Resources]] = {level: [] for level in flavor.levels}
    _collect_free(flavor.domains, by_level)
    hosts = list(hosts_of(flavor.domains))
    if hosts and flavor.levels and not by_level.get(flavor.levels[-1]):
        by_level[flavor.levels[-1]] = [h.free for h in hosts]
    return tuple(
        LevelFree(level, len(frees), summed(frees), _most(frees))
        for level, frees in by_level.items()
        if frees
    )


def _collect_free(domains: tuple[DomainView, ...], out: dict[str, list[Resources]]) -> None:
    for domain in domains:
        out.setdefault(domain.level, []).append(domain.free)
        _collect_free(domain.domains, out)


def _most(frees: list[Resources]) -> dict[str, int]:
    """The free resources of the domain with the most of the first resource it has."""
    for r in (*BAR_RESOURCES, "memory"):
        if any(r in f for f in frees):
            most: Resources = max(frees, key=lambda f: f.get(r, 0))
            return dict(most)
    return dict(frees[0]) if frees else {}


@dataclass(frozen=True)
class Part:
    """One replaceable element: its id, the macro that draws it and the model data it is
    drawn from (equal data: equal HTML)."""

    id: str
    macro: str
    args: tuple[Any, ...]


def parts(view: ClusterView) -> dict[str, Part]:
    """Every replaceable element of the page, by id; `TOPOLOGY_ID`'s data is the shape only
    (flavors, levels, domain paths), so it changes only when the others' ids do."""
    out = {TOPOLOGY_ID: Part(TOPOLOGY_ID, "", (_shape(view),))}
    for flavor in view.flavors:
        resource = bar_resource(flavor)
        summary = element_id("free", flavor.name)
        out[summary] = Part(summary, "free_table", (flavor.name, free_by_level(flavor)))
        for path, domain in _walk(flavor.domains, ()):
            if domain.hosts:
                key = element_id("dom", flavor.name, *path)
                out[key] = Part(key, "leaf", (flavor.name, path, domain, resource))
            else:
                key = element_id("head", flavor.name, *path)
                out[key] = Part(key, "head", (flavor.name, path, domain))
    out["workloads"] = Part("workloads", "workloads", (view.workloads,))
    out["groups"] = Part("groups", "groups", (view.placement_groups,))
    out["replacements"] = Part("replacements", "replacements", (view.replacements,))
    return out


def _walk(
    domains: tuple[DomainView, ...], path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], DomainView]]:
    for domain in domains:
        here = (*path, domain.value)
        yield here, domain
        yield from _walk(domain.domains, here)


def _shape(view: ClusterView) -> tuple:
    return tuple(
        (f.name, f.levels, tuple(path for path, _ in _walk(f.domains, ()))) for f in view.flavors
    )


class Renderer:
    def __init__(self) -> None:
        self.env = jinja2.Environment(
            loader=jinja2.PackageLoader("tas.view", "templates"),
            autoescape=True,
            trim_blocks=True,
            lstrip_blocks=True,
            undefined=jinja2.StrictUndefined,
        )
        self.env.filters["short"] = short_level  # the long node label stays in a title
        self.env.globals.update(
            element_id=element_id,
            workload_colour=workload_colour,
            quantity=quantity,
            resources_text=resources_text,
            segments=segments,
            bar_resource=bar_resource,
            free_by_level=free_by_level,
        )
        self.macros: Any = self.env.get_template("parts.html").module  # its macros, by name

    def page(self, view: ClusterView, version: int) -> str:
        """The whole page; its event stream starts after `version` (the view's)."""
        levels = sorted({level for f in view.flavors for level in f.levels})
        return self.env.get_template("page.html").render(view=view, version=version, levels=levels)

    def render_part(self, part: Part) -> Markup:
        """One part, marked to replace its namesake on the page (htmx's hx-swap-oob)."""
        if part.id == TOPOLOGY_ID:
            raise ValueError("the topology is rendered from the view: render_topology")
        return getattr(self.macros, part.macro)(*part.args, oob=True)

    def render_topology(self, view: ClusterView) -> Markup:
        return self.macros.topology(view, oob=True)

    def gang(self, largest: Mapping[str, int], level: str, mode: str) -> Markup:
        return self.macros.gang_result(largest, level, mode)
