"""The NUMA zone annotation's value (NUMA_ZONE_ANNOTATION): written by the ungater, read back
by the cache to charge the zone until the node's NodeResourceTopology shows the pod."""

from __future__ import annotations

from tas.solver.types import NumaShape


def format_numa_zones(zones: tuple[str, ...], shape: NumaShape) -> str | None:
    """One zone name when the pod has one zone for all (pod scope, one pinned container),
    else `container=zone` pairs; None when no container takes a zone."""
    present = {zone for zone in zones if zone}
    if not present:
        return None
    if len(zones) == 1 or (len(present) == 1 and all(zones)):
        return present.pop()
    return ",".join(
        f"{name}={zone}" for name, zone in zip(shape.names, zones, strict=False) if zone
    )


def parse_numa_zones(value: str | None, shape: NumaShape) -> tuple[str, ...]:
    """The zone of each of the shape's containers ("" where none is named); a single name
    stands for every container. Never fails: an unreadable value names no zone."""
    if not value:
        return ()
    if "=" not in value:
        return (value.strip(),) * max(1, len(shape.containers))
    by_name = {}
    for pair in value.split(","):
        name, _, zone = pair.partition("=")
        by_name[name.strip()] = zone.strip()
    return tuple(by_name.get(name, "") for name in shape.names)
