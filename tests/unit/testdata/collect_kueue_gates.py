"""Rebuild kueue_gates.txt from Kueue's sources (run by hand; the tests only read the table).

    python tests/unit/testdata/collect_kueue_gates.py KUEUE_GIT_DIR KUEUE_V0_17_0_DIR

Each release's default is the last versioned spec of the gate in that release's
pkg/features/kube_features.go: Kueue's binaries emulate a Kubernetes version above every
spec's Version, so the newest spec always applies. Gates merged after the mirror's main are
added from LATER, with their sources.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

FILE = "pkg/features/kube_features.go"
RELEASES = ("v0.17.0", "v0.18.0", "v0.19.0", "main")  # main: v0.20.0-devel, 2026-08-22
# Merged after that main; cell text as in the table, then where the fact comes from.
LATER = {
    "TASGroupedPodSetSlicing": ("Beta:on", "kueue#15111 (0.18/0.19 cherry-picks: off)"),
    "TASNodeFeasibilityForAllLevels": ("Beta:on", "kueue#14191, DRA KEP text"),
    "TASPartialSlices": ("Alpha:on", "kueue#15640, tests (stage unconfirmed)"),
    "TASReplaceMultipleFailedNodes": ("Alpha:off", "kueue#12344 (refs/pull head)"),
}
HEADER = """\
# Feature gates of Kueue v0.17.0 to v0.20: written by collect_kueue_gates.py from
# pkg/features/kube_features.go at v0.17.0 (Go module cache), v0.18.0, v0.19.0 and main of
# 2026-08-22 (v0.20.0-devel), plus the gates merged to main later (source column).
# A cell is the release's stage and default ('-': the release does not know the gate).
# Patch releases (v0.17.x, v0.18.x, v0.19.x) added some gates early; they are not columns.
# name                                             v0.17.0          v0.18.0          v0.19.0          v0.20            source
"""
SPEC = re.compile(
    r'Version: version\.MustParse\("[\d.]+"\), Default: (true|false), PreRelease: featuregate\.(\w+)'
)


def cells(source: str) -> dict[str, str]:
    """Gate name -> 'Stage:on|off' of its newest spec."""
    consts = dict(re.findall(r'^\t(\w+)\s+featuregate\.Feature = "(\w+)"', source, re.M))
    table = source.split("defaultVersionedFeatureGates = map", 1)[1]
    found = {}
    for match in re.finditer(r"^\t(\w+): \{\n(.*?)^\t\},", table, re.M | re.S):
        default, stage = SPEC.findall(match.group(2))[-1]
        found[consts[match.group(1)]] = f"{stage}:{'on' if default == 'true' else 'off'}"
    return found


def main(git_dir: str, v0_17_dir: str) -> None:
    columns = [cells((Path(v0_17_dir) / FILE).read_text())]
    for rev in RELEASES[1:]:
        show = ["git", "-C", git_dir, "show", f"{rev}:{FILE}"]
        columns.append(cells(subprocess.run(show, capture_output=True, text=True).stdout))
    names = sorted(set().union(*columns) | set(LATER))
    print(HEADER, end="")
    for name in names:
        row = [column.get(name, "-") for column in columns]
        source = "kube_features.go"
        if name in LATER:
            row[-1], source = LATER[name]
        print(f"{name:50} " + " ".join(f"{c:16}" for c in row) + source)


if __name__ == "__main__":
    main(*sys.argv[1:])
