"""`tas simulate --plot FILE.png`: utilisation, fragmentation and waiting workloads over time,
and with fair sharing each ClusterQueue's weighted share.

matplotlib is an optional extra (`pip install 'tas-operator[plot]'`), imported only here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

STYLES = ("-", "--")  # one per run: the trace's gates, then --compare's


def write(path: str, runs: Sequence[tuple[str, dict[str, Any]]]) -> None:
    """Draw each (label, report) as step lines, one style per run; OSError if `path` cannot be
    written."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display
    import matplotlib.pyplot as plt

    fair = any("weightedShare" in e for _, report in runs for e in report["timeline"])
    panels = 4 if fair else 3
    figure, axes_list = plt.subplots(panels, 1, sharex=True, figsize=(10, 8 + 2 * (panels - 3)))
    used, fragmented, waiting = axes_list[:3]
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colours: dict[str, str] = {}  # one per resource, the same in every run and panel
    for (label, report), style in zip(runs, STYLES, strict=False):
        timeline = report["timeline"]
        hours = [entry["time"] / 3600 for entry in timeline]
        for axes, key in ((used, "utilisation"), (fragmented, "fragmentation")):
            for resource in timeline[0][key] if timeline else ():
                colour = colours.setdefault(resource, palette[len(colours) % len(palette)])
                fractions = [entry[key][resource] for entry in timeline]
                axes.step(
                    hours,
                    fractions,
                    style,
                    color=colour,
                    where="post",
                    label=f"{resource} ({label})",
                )
        counts = [entry["workloadsWaiting"] for entry in timeline]
        waiting.step(hours, counts, style, color="black", where="post", label=label)
    if fair:
        _shares(axes_list[3], runs, palette)
    used.set_ylabel("utilisation")
    used.set_ylim(0, 1.05)
    fragmented.set_ylabel("fragmentation")
    fragmented.set_ylim(0, 1.05)
    waiting.set_ylabel("workloads waiting")
    axes_list[-1].set_xlabel("simulated hours")
    for axes in axes_list:
        axes.grid(alpha=0.3)
        if axes.has_data():
            axes.legend(fontsize="small", loc="upper right")
    figure.tight_layout()
    try:
        figure.savefig(path, format="png", dpi=100)
    finally:
        plt.close(figure)


def _shares(axes: Any, runs: Sequence[tuple[str, dict[str, Any]]], palette: list[str]) -> None:
    """Each ClusterQueue's weightedShare (status.fairSharing) over time; a weight-0 queue's
    borrowing share (beyond every other) is left out of the scale."""
    from tas.api.models.fairsharing import MAX_WEIGHTED_SHARE

    colours: dict[str, str] = {}
    for (label, report), style in zip(runs, STYLES, strict=False):
        timeline = [e for e in report["timeline"] if "weightedShare" in e]
        hours = [entry["time"] / 3600 for entry in timeline]
        for queue in timeline[0]["weightedShare"] if timeline else ():
            colour = colours.setdefault(queue, palette[len(colours) % len(palette)])
            values = [entry["weightedShare"][queue] for entry in timeline]
            shown = [v if v < MAX_WEIGHTED_SHARE else float("nan") for v in values]
            axes.step(hours, shown, style, color=colour, where="post", label=f"{queue} ({label})")
    axes.set_ylabel("weighted share")
