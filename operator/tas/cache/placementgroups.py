"""A placement group's state as the planner needs it, read from the cache: the pods of its
members that hold quota (admitted, or assumed while their write is on its way) and the
partition of each domain. Nothing here is stored twice: the members' charges are the truth."""

from __future__ import annotations

from tas.api.placementgroups import GroupSpec, rules_for
from tas.cache.projections import Key
from tas.cache.state import ClusterState
from tas.solver import TopologySnapshot
from tas.solver.groups import GroupRules, GroupState

Path = tuple[str, ...]


def spec_of(state: ClusterState, key: Key, fallback: GroupSpec | None) -> GroupSpec | None:
    """The group's constraints: its object's, else those the member's annotations give."""
    group = state.placement_groups.get(key)
    return group.spec if group is not None else fallback


def member_pods(
    state: ClusterState, key: Key, flavor: str, snapshot: TopologySnapshot
) -> dict[Key, dict[Path, int]]:
    """Each member holding quota in the flavor -> its pods per leaf path."""
    out: dict[Key, dict[Path, int]] = {}
    charges = state.charges()
    for member in state.group_members.get(key, ()):
        charge = charges.get(member)
        if charge is None:
            continue
        pods: dict[Path, int] = {}
        for ps in charge.pod_sets:
            if ps.flavor != flavor or ps.assignment is None:
                continue
            for domain in ps.assignment.domains:
                path = snapshot.leaf_path(domain.values) or _labelled_path(
                    state, snapshot.levels, domain.values
                )
                if path is not None:
                    pods[path] = pods.get(path, 0) + domain.count
        if pods:
            out[member] = pods
    return out


def _labelled_path(state: ClusterState, levels: tuple[str, ...], values) -> Path | None:
    """The path of a domain the snapshot leaves out (a cordoned or not ready node still runs
    the member's pods): from the assignment's values when they are the full path, else from
    the node's labels."""
    if len(values) == len(levels):
        return tuple(values)
    node = state.nodes.get(values[-1])
    if node is None or any(level not in node.labels for level in levels):
        return None
    return tuple(node.labels[level] for level in levels)


def partitions_of(state: ClusterState, key: Key) -> dict[Path, int]:
    """Each domain's partition: the object's, under the decisions for members still being
    written. Those win: each lives only until its member's write lands, so it is newer than
    any object read, which may still give a domain whose pods have all left since (released:
    the planner may give it to another partition) to its old partition."""
    group = state.placement_groups.get(key)
    out = dict(group.partitions) if group is not None else {}
    for domains in state.assumed_partitions.get(key, {}).values():
        out.update(domains)
    return out


def group_state(
    state: ClusterState, key: Key, rules: GroupRules, flavor: str, snapshot: TopologySnapshot
) -> GroupState:
    pods: dict[Path, int] = {}
    for member in member_pods(state, key, flavor, snapshot).values():
        for path, n in member.items():
            pods[path] = pods.get(path, 0) + n
    out = GroupState(pods=pods)
    if rules.partition_level is not None:
        level = rules.partition_level
        held = out.domains_at(level)
        out.partition_of = {d: p for d, p in partitions_of(state, key).items() if d in held}
        for path, n in pods.items():
            partition = out.partition_of.get(path[: level + 1])
            if partition is not None:
                out.partition_sizes[partition] = out.partition_sizes.get(partition, 0) + n
    return out


def owned_by_others(
    state: ClusterState,
    me: Key | None,
    flavor: str,
    snapshot: TopologySnapshot,
    attr: str = "exclusive_topology",
) -> dict[int, set[Path]]:
    """Level index -> the domains exclusive groups other than `me` hold in this flavor (with
    `attr="affinity_topology"`: the affinity domains of other groups)."""
    owned: dict[int, set[Path]] = {}
    for key, members in state.group_members.items():
        if key == me or not members:
            continue
        spec = spec_of(state, key, annotated_spec(state, members))
        level = getattr(spec, attr) if spec is not None else None
        if level is None or level not in snapshot.levels:
            continue
        depth = snapshot.levels.index(level)
        for pods in member_pods(state, key, flavor, snapshot).values():
            owned.setdefault(depth, set()).update(path[: depth + 1] for path in pods)
    return owned


def held_spec(state: ClusterState, key: Key) -> GroupSpec | None:
    """The constraints given by the members that hold capacity (assumed or admitted)."""
    charges = state.charges()
    holding = {m for m in state.group_members.get(key, ()) if m in charges}
    return annotated_spec(state, holding) if holding else None


def annotated_spec(state: ClusterState, members: set[Key]) -> GroupSpec | None:
    return state.annotated_group_spec(members)


def status(
    state: ClusterState,
    key: Key,
    spec: GroupSpec,
    levels: tuple[str, ...],
    flavor: str,
    snapshot: TopologySnapshot,
) -> dict:
    """The PlacementGroup status the members' charges give."""
    rules = rules_for(spec, levels)
    members = member_pods(state, key, flavor, snapshot)
    current = group_state(state, key, rules, flavor, snapshot)
    out: dict = {
        "members": sorted(name for _, name in members),
        "pods": sum(current.pods.values()),
        "affinityDomain": None,  # null: a merge patch removes what no longer holds
        "ownedDomains": None,
    }
    if rules.affinity is not None and not current.empty:
        out["affinityDomain"] = list(min(current.domains_at(rules.affinity)))
    if rules.exclusive is not None and not current.empty:
        out["ownedDomains"] = [list(d) for d in sorted(current.domains_at(rules.exclusive))]
    if rules.partitions:
        by_partition: dict[int, list[Path]] = {}
        for domain, partition in sorted(current.partition_of.items()):
            by_partition.setdefault(partition, []).append(domain)
        out["partitions"] = [
            {
                "partition": p,
                "domains": [list(d) for d in by_partition.get(p, [])],
                "pods": current.partition_sizes.get(p, 0),
            }
            for p in range(1, rules.partitions + 1)
        ]
    return out


def partition_label_of(state: ClusterState, key: Key, path: Path, level: int) -> int | None:
    return partitions_of(state, key).get(path[: level + 1])


def status_now(state: ClusterState, key: Key, spec: GroupSpec, flavor: str | None = None) -> dict:
    """The status from the members' charges, in `flavor` or the flavor they hold (empty
    without members); raises PlacementGroupError when a level is not the flavor's topology's."""
    if flavor is not None and flavor in state.flavors:
        topology = state.flavors[flavor].topology_name
        levels = state.topologies.get(topology or "")
        if levels:
            return status(state, key, spec, levels, flavor, state.snapshot(flavor))
    charges = state.charges()
    for member in sorted(state.group_members.get(key, ())):
        charge = charges.get(member)
        for ps in charge.pod_sets if charge is not None else ():
            held = state.flavors.get(ps.flavor)
            if ps.assignment is None or held is None or not held.topology_name:
                continue
            levels = state.topologies.get(held.topology_name)
            if levels is None:
                continue
            return status(state, key, spec, levels, ps.flavor, state.snapshot(ps.flavor))
    out: dict = {"members": [], "pods": 0, "affinityDomain": None, "ownedDomains": None}
    if spec.partitions:
        out["partitions"] = [
            {"partition": p, "domains": [], "pods": 0} for p in range(1, spec.partitions + 1)
        ]
    return out
