"""Hand-made views for the web page's tests: a flavor of blocks -> racks -> hosts."""

from __future__ import annotations

from dataclasses import replace

from tas.view import model as m

BLOCK, RACK, HOST = "block", "rack", "kubernetes.io/hostname"
CPU = 1000  # one core in milli-units


def host(name: str, uses: tuple[m.Use, ...] = (), marks: tuple[str, ...] = (), cpu: int = 8):
    used = sum(u.requests.get("cpu", 0) for u in uses)
    alloc = {"cpu": cpu * CPU, "pods": 110 * CPU}
    return m.HostView(name, alloc, uses, {"cpu": alloc["cpu"] - used}, marks)


def use(workload: str | None, cpus: int, pods: int = 1) -> m.Use:
    return m.Use(workload, {"cpu": cpus * CPU, "pods": pods * CPU}, pods)


def rack(value: str, hosts: tuple[m.HostView, ...]) -> m.DomainView:
    free = {"cpu": sum(h.free["cpu"] for h in hosts)}
    alloc = {"cpu": sum(h.allocatable["cpu"] for h in hosts)}
    return m.DomainView(RACK, value, free, alloc, hosts=hosts)


def block(value: str, racks: tuple[m.DomainView, ...]) -> m.DomainView:
    free = {"cpu": sum(r.free["cpu"] for r in racks)}
    alloc = {"cpu": sum(r.allocatable["cpu"] for r in racks)}
    return m.DomainView(BLOCK, value, free, alloc, domains=racks)


def cluster(
    hosts_by_rack: dict[tuple[str, str], tuple[m.HostView, ...]],
    workloads: tuple[m.WorkloadView, ...] = (),
    flavor: str = "tas-flavor",
) -> m.ClusterView:
    """One flavor whose blocks and racks are the keys' (block, rack), in order."""
    blocks: dict[str, list[m.DomainView]] = {}
    for (b, r), hosts in hosts_by_rack.items():
        blocks.setdefault(b, []).append(rack(r, hosts))
    domains = tuple(block(b, tuple(racks)) for b, racks in blocks.items())
    f = m.FlavorView(flavor, "default", (BLOCK, RACK, HOST), domains)
    return m.ClusterView((f,), workloads)


def two_racks(**uses_of: tuple[m.Use, ...]) -> m.ClusterView:
    """b1/r1 (h1, h2) and b1/r2 (h3, h4); `h1=(use(...),)` puts uses on a host."""

    def h(name):
        return host(name, uses_of.get(name, ()))

    return cluster({("b1", "r1"): (h("h1"), h("h2")), ("b1", "r2"): (h("h3"), h("h4"))})


def pending(key: str, reason: str, needs: str = "4 pods of cpu=1") -> m.WorkloadView:
    return m.WorkloadView(key, "user-queue", "cq", 4, False, reason, needs)


def admitted(key: str, hosts: tuple[str, ...]) -> m.WorkloadView:
    return m.WorkloadView(key, "user-queue", "cq", len(hosts), True, hosts=hosts)


def with_workloads(view: m.ClusterView, *workloads: m.WorkloadView) -> m.ClusterView:
    return replace(view, workloads=tuple(workloads))
