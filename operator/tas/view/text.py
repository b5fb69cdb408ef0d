"""The view model drawn for the terminal with rich: `tas top`.

Per flavor, one row per block and rack (every level above the hosts) with an occupancy bar and
used/total per resource, and how many of its hosts are cordoned, not ready or tainted; then the
admitted workloads, the first pending ones with their reasons and needs, placement groups, and
the latest replacements. Used is what the hosts' uses request (admitted workloads and pods
outside topology-aware admission); total is the domain's allocatable. Every name from the
cluster goes in as plain Text (`shown`), never as rich markup nor with control characters.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from tas.view import model
from tas.view.model import ClusterView, DomainView, FlavorView, HostView, WorkloadView
from tas.view.words import amount, count, duration, level_name, printable

TOP_ADMITTED = 10
TOP_PENDING = 10
RECENT_REPLACEMENTS = 5
BAR_WIDTH = 10
USED, UNAVAILABLE, FREE = "█", "▒", "░"  # the bar: in use, on hosts not offered, offered
FIRST_RESOURCES = ("cpu", "memory")  # then the others by name, then pods
PODS = "pods"
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
    levels = " > ".join(level_name(level) for level in flavor.levels)
    table = _table(f"flavor {flavor.name} · topology {flavor.topology} ({levels})")
    table.add_column("domain", no_wrap=True)
    table.add_column("hosts", justify="right")
    for resource in resources:
        table.add_column(resource, no_wrap=True)
    for label in ("cordoned", "not ready", "tainted"):
        table.add_column(label, justify="right")
    for depth, domain in walk(flavor.domains):
        table.add_row(*domain_row(domain, depth, resources))
    return table


def walk(domains: Sequence[DomainView], depth: int = 0) -> Iterator[tuple[int, DomainView]]:
    """Every domain above the hosts, top first, each followed by those inside it."""
    for domain in domains:
        yield depth, domain
        yield from walk(domain.domains, depth + 1)


def hosts_of(domain: DomainView) -> Iterator[HostView]:
    yield from domain.hosts
    for inner in domain.domains:
        yield from hosts_of(inner)


def resource_order(flavor: FlavorView) -> list[str]:
    """The resources some domain of the flavor has: cpu, memory, the others by name, pods."""
    names = {r for domain in flavor.domains for r, v in domain.allocatable.items() if v > 0}
    first = [r for r in FIRST_RESOURCES if r in names]
    rest = sorted(names - set(first) - {PODS})
    return first + rest + ([PODS] if PODS in names else [])


def used(hosts: Sequence[HostView]) -> dict[str, int]:
    """What the hosts' uses request, per resource (pods: the uses' pods, in milli-units)."""
    total: dict[str, int] = {}
    for host in hosts:
        for use in host.uses:
            for resource, value in use.requests.items():
                total[resource] = total.get(resource, 0) + value
            if PODS not in use.requests:
                total[PODS] = total.get(PODS, 0) + use.pods * 1000
    return total


def unavailable(hosts: Sequence[HostView]) -> dict[str, int]:
    """The room left on hosts that new pods are not offered (cordoned, not ready, tainted)."""
    total: dict[str, int] = {}
    for host in hosts:
        if not host.marks:
            continue
        taken = used([host])
        for resource, value in host.allocatable.items():
            total[resource] = total.get(resource, 0) + max(value - taken.get(resource, 0), 0)
    return total


def domain_row(domain: DomainView, depth: int, resources: Sequence[str]) -> list[Text]:
    hosts = list(hosts_of(domain))
    taken, idle = used(hosts), unavailable(hosts)
    name = shown("  " * depth + f"{level_name(domain.level)} {domain.value}")
    cells = [name, shown(count(len(hosts)))]
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
            shown(group.key), shown(level_name(group.level)), shown(", ".join(group.domains))
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
