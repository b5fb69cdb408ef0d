"""The view model drawn for the terminal with rich: `tas top`.

Per flavor, one row per block and rack (every level above the hosts) with an occupancy bar and
used/total per resource, and how many of its hosts are cordoned, not ready or tainted; then the
admitted workloads, the first pending ones with their reasons and needs, placement groups, and
the latest replacements. Used is what the uses in a domain request (admitted workloads and
pods outside topology-aware admission, on its hosts or, where the lowest level is not the
hostname, on its lowest domains); total is the domain's allocatable. Every name from the
cluster goes in as plain Text (`shown`), never as rich markup nor with control characters.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from tas.solver.types import ONE_POD, PODS
from tas.view import model
from tas.view.amounts import amount, count, duration, printable
from tas.view.model import (
    ClusterView,
    DomainView,
    FlavorView,
    HostView,
    Use,
    WorkloadView,
    summed,
)
from tas.view.words import short_level

TOP_ADMITTED = 10
TOP_PENDING = 10
RECENT_REPLACEMENTS = 5
BAR_WIDTH = 10
USED, UNAVAILABLE, FREE = "█", "▒", "░"  # the bar: in use, on hosts not offered, offered
FIRST_RESOURCES = ("cpu", "memory")  # then the others by name, then pods
ALL_HOSTS = "all hosts"  # the one row of a flavor whose only level is the hostname
# A clock below this many seconds is a simulation's (from 0), not the unix time of a cluster.
SIMULATED_CLOCK_BELOW = 10 * 365 * 86400


def render(
    view: ClusterView, *, admitted: int = TOP_ADMITTED, pending: int = TOP_PENDING
) -> RenderableType:
    """The whole frame: header, one table per flavor, then the workloads and the events."""
    parts: list[RenderableType] = [header(view)]
    parts += [flavor_table(flavor) for flavor in view.flavors]
    if not view.flavors:
        parts.append(shown("no topology-aware flavor"))
    parts.append(workloads_table(view.workloads, admitted=True, top=admitted))
    parts.append(workloads_table(view.workloads, admitted=False, top=pending))
    if view.placement_groups:
        parts.append(groups_table(view))
    if view.replacements:
        parts.append(replacements_table(view))
    return Group(*parts)


def to_text(view: ClusterView, width: int = 120, **top: int) -> str:
    """The frame as plain text (no colour, no cursor codes): `tas top --once` into a pipe,
    and tests."""
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, force_terminal=False).print(
        render(view, **top)
    )
    return out.getvalue()


def shown(value: str, style: str = "") -> Text:
    """Text as it is, never markup, and with no control character: a name or a message from
    the cluster must not move the cursor or clear the screen."""
    return Text(printable(value), style=style)


def header(view: ClusterView) -> Text:
    running = sum(1 for w in view.workloads if w.admitted)
    line = shown(f"tas top · {clock(view.at)} · ", style="bold")
    line.append(f"{running} admitted, {len(view.workloads) - running} pending")
    for key, value in sorted(view.extras.items()):
        line.append_text(shown(f" · {key}: {value}"))
    line.append(f"\n{USED} used  {UNAVAILABLE} idle on hosts not offered  {FREE} free", style="dim")
    return line


def clock(at: float) -> str:
    if not math.isfinite(at) or at < SIMULATED_CLOCK_BELOW:
        return f"t = {duration(at)}"
    try:
        return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, ValueError, OSError):
        return f"t = {at:g} s"


def _table(title: str) -> Table:
    """Compact: a rule under the header and nothing else, to keep the frame short."""
    return Table(
        title=shown(title, style="bold"),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )


# ---- the topology ------------------------------------------------------------------------------


def flavor_table(flavor: FlavorView) -> Table:
    resources = resource_order(flavor)
    levels = " > ".join(short_level(level) for level in flavor.levels)
    table = _table(f"flavor {flavor.name} · topology {flavor.topology} ({levels})")
    table.add_column("domain", no_wrap=True)
    table.add_column("hosts", justify="right")
    for resource in resources:
        table.add_column(resource, no_wrap=True)
    for label in ("cordoned", "not ready", "tainted"):
        table.add_column(label, justify="right")
    for depth, domain in walk(top_domains(flavor)):
        table.add_row(*domain_row(domain, depth, resources))
    return table


def top_domains(flavor: FlavorView) -> tuple[DomainView, ...]:
    """The flavor's top level; with the hostname as its only level, one row for all hosts."""
    if not flavor.hosts:
        return flavor.domains
    everything = DomainView(
        level="",
        value=ALL_HOSTS,
        free=summed(host.free for host in flavor.hosts),
        allocatable=summed(host.allocatable for host in flavor.hosts),
        hosts=flavor.hosts,
    )
    return (*flavor.domains, everything)


def walk(domains: Sequence[DomainView], depth: int = 0) -> Iterator[tuple[int, DomainView]]:
    """Every domain above the hosts, top first, each followed by those inside it."""
    for domain in domains:
        yield depth, domain
        yield from walk(domain.domains, depth + 1)


def hosts_of(domain: DomainView) -> Iterator[HostView]:
    yield from domain.hosts
    for inner in domain.domains:
        yield from hosts_of(inner)


def uses_of(domain: DomainView) -> Iterator[Use]:
    """Every use in the domain: its hosts', and its lowest domains' own (where the lowest
    level is not the hostname, admitted workloads use domains, not hosts)."""
    yield from domain.uses
    for host in domain.hosts:
        yield from host.uses
    for inner in domain.domains:
        yield from uses_of(inner)


def resource_order(flavor: FlavorView) -> list[str]:
    """The resources some domain of the flavor has: cpu, memory, the others by name, pods."""
    names = {r for domain in top_domains(flavor) for r, v in domain.allocatable.items() if v > 0}
    first = [r for r in FIRST_RESOURCES if r in names]
    rest = sorted(names - set(first) - {PODS})
    return first + rest + ([PODS] if PODS in names else [])


def used(uses: Iterable[Use]) -> dict[str, int]:
    """What the uses request, per resource; pods from their count when not among them."""
    return summed(
        use.requests if PODS in use.requests else {**use.requests, PODS: use.pods * ONE_POD}
        for use in uses
    )


def unavailable(hosts: Iterable[HostView]) -> dict[str, int]:
    """The room left on hosts that new pods are not offered (cordoned, not ready, tainted)."""
    left = []
    for host in hosts:
        if host.marks:
            taken = used(host.uses)
            left.append({r: max(v - taken.get(r, 0), 0) for r, v in host.allocatable.items()})
    return summed(left)


def domain_row(domain: DomainView, depth: int, resources: Sequence[str]) -> list[Text]:
    hosts = list(hosts_of(domain))
    taken, idle = used(uses_of(domain)), unavailable(hosts)
    label = f"{short_level(domain.level)} {domain.value}" if domain.level else domain.value
    cells = [shown("  " * depth + label), shown(count(len(hosts)))]
    for resource in resources:
        total = domain.allocatable.get(resource, 0)
        cells.append(meter(resource, taken.get(resource, 0), idle.get(resource, 0), total))
    for mark in (model.CORDONED, model.NOT_READY, model.TAINTED):
        marked = sum(1 for host in hosts if mark in host.marks)
        cells.append(shown(str(marked) if marked else "-", style="red" if marked else "dim"))
    return cells


def meter(resource: str, taken: int, idle: int, total: int) -> Text:
    """`██████░░░░ 12/20`: the used share of the bar, the share not offered, the rest free."""
    bar = Text()
    if total > 0:
        used_cells = _cells(taken, total)
        idle_cells = min(_cells(idle, total), BAR_WIDTH - used_cells)
        bar.append(USED * used_cells, style="green" if taken < total else "red")
        bar.append(UNAVAILABLE * idle_cells, style="yellow")
        bar.append(FREE * (BAR_WIDTH - used_cells - idle_cells), style="dim")
    else:
        bar.append(" " * BAR_WIDTH)
    bar.append(f" {amount(resource, taken)}/{amount(resource, total)}")
    return bar


def _cells(part: int, total: int) -> int:
    """Cells of the bar for part/total, rounded up so that any use shows."""
    if part <= 0:
        return 0
    return min(BAR_WIDTH, max(1, -(-part * BAR_WIDTH // total)))


# ---- the workloads and the events -------------------------------------------------------------


def workloads_table(workloads: Sequence[WorkloadView], *, admitted: bool, top: int) -> Table:
    chosen = [w for w in workloads if w.admitted == admitted]
    kind = "admitted" if admitted else "pending"
    first = chosen[:top]
    more = f", the first {len(first)}" if len(chosen) > len(first) else ""
    table = _table(f"{kind} workloads: {len(chosen)}{more}")
    for column in ("workload", "cluster queue", "pods"):
        table.add_column(column, justify="right" if column == "pods" else "left")
    if admitted:
        table.add_column("hosts", justify="right")
    else:
        table.add_column("needs")
        table.add_column("reason", overflow="fold")
    for workload in first:
        cells = [shown(workload.key), shown(workload.cluster_queue), shown(count(workload.pods))]
        if admitted:
            cells.append(shown(count(len(workload.hosts))))
        else:
            cells += [shown(workload.needs), shown(workload.reason)]
        table.add_row(*cells)
    return table


def groups_table(view: ClusterView) -> Table:
    table = _table("placement groups")
    for column in ("group", "level", "domains"):
        table.add_column(column)
    for group in view.placement_groups:
        table.add_row(
            shown(group.key), shown(short_level(group.level)), shown(", ".join(group.domains))
        )
    return table


def replacements_table(view: ClusterView, top: int = RECENT_REPLACEMENTS) -> Table:
    table = _table("recent replacements")
    for column in ("when", "workload", "failed node", "replacement"):
        table.add_column(column)
    for swap in view.replacements[:top]:
        table.add_row(
            shown(_since(view.at, swap.at)),
            shown(swap.workload),
            shown(swap.failed),
            shown(swap.replacement),
        )
    return table


def _since(now: float, at: float) -> str:
    ago = now - at
    if not math.isfinite(ago):
        return clock(at)
    return f"{duration(ago)} ago" if ago >= 0 else clock(at)
