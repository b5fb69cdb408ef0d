"""A placement profile that looks at what a placement leaves behind (ours; gate
TASProfileFragmentationAware, off by default: the default stays Kueue's BestFit).

Kueue's BestFit takes, at the requested level, the domain with the fewest free pods that still
holds the request, wherever it is. That keeps the chosen domain tight but can cut into an empty
block while another block is half used, and the next gang that needs a whole block then finds
none. This profile chooses among the same feasible domains top-down: the block with the least
room that still has a fitting domain, then within it the tightest fitting domain (and so on for
deeper levels), so that partly used parents fill up first and empty ones stay whole.

Inside the chosen domain Kueue's algorithm places the pods, in one order changed: the domains
under it are taken fullest first (LeastFreeCapacity's order) rather than emptiest first. Kueue
takes the emptiest racks of a block first to use few of them, which breaks whole racks and
leaves the half-used ones behind; a later gang that needs a whole rack, or a block's worth of
rack-sized slices, then finds none. Filling the partly used ones first keeps the whole ones.
"""

from __future__ import annotations

import numpy as np

from tas.solver.groups import Layout


def choose_domain(
    layout: Layout,
    capacity: np.ndarray,
    level: int,
    count: int,
    slice_level: int | None = None,
    slice_size: int = 1,
) -> int | None:
    """The code of the domain at `level` to place `count` pods in (whole slices of
    `slice_size` pods, each in one domain of `slice_level`), or None when none fits (then
    BestFit fails a required level, or spreads over a preferred one, as Kueue does)."""
    codes = layout.codes[level]
    domains = len(layout.domains[level])
    room = np.bincount(codes, weights=capacity, minlength=domains)
    if slice_level is not None and slice_size > 1:
        # a domain holds as many slices as its slice-level domains hold, each on its own
        per_slice_domain = np.bincount(
            layout.codes[slice_level], weights=capacity, minlength=len(layout.domains[slice_level])
        )
        slices = per_slice_domain // slice_size
        parent_of = np.zeros(len(layout.domains[slice_level]), dtype=np.int64)
        parent_of[layout.codes[slice_level]] = codes
        slice_room = np.bincount(parent_of, weights=slices, minlength=domains) * slice_size
        room = np.minimum(room, slice_room)
    fitting = np.flatnonzero(room >= count)
    if len(fitting) == 0:
        return None
    # Sort keys, most significant last for np.lexsort: the path (ties), the domain's own room,
    # then each ancestor's room from the level above up to the top.
    keys: list[np.ndarray] = [np.arange(len(fitting)), room[fitting]]
    for ancestor in range(level - 1, -1, -1):
        parent_room = np.bincount(
            layout.codes[ancestor],
            weights=capacity,
            minlength=len(layout.domains[ancestor]),
        )
        parent_of = np.zeros(domains, dtype=np.int64)
        parent_of[codes] = layout.codes[ancestor]
        keys.append(parent_room[parent_of[fitting]])
    best = np.lexsort(keys)[0]
    return int(fitting[best])
