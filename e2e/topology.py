"""kwok nodes for a topology described by its shape, like Kueue's own e2e cluster.

    python -m e2e.topology --blocks 2 --racks 2 --hosts 2 | kubectl apply -f -

Every node carries `type: kwok` (so the local kwok manages it), the block and rack labels and
`kubernetes.io/hostname`. Names read as their place: b1-r2-h1 is host 1 of rack 2 of block 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field

BLOCK_LABEL = "cloud.provider.com/topology-block"
RACK_LABEL = "cloud.provider.com/topology-rack"
HOSTNAME_LABEL = "kubernetes.io/hostname"
LEVELS = (BLOCK_LABEL, RACK_LABEL, HOSTNAME_LABEL)
KWOK_SELECTOR = {"type": "kwok"}
# Like Kueue's e2e cluster: a label the TAS ResourceFlavor selects on.
NODE_GROUP_LABEL = "cloud.provider.com/node-group"
NODE_GROUP = "tas-group"


@dataclass(frozen=True)
class Shape:
    blocks: int = 2
    racks: int = 2  # per block
    hosts: int = 2  # per rack
    allocatable: dict[str, str] = field(
        default_factory=lambda: {"cpu": "8", "memory": "16Gi", "pods": "110"}
    )


def node_name(block: int, rack: int, host: int) -> str:
    return f"b{block}-r{rack}-h{host}"


def node_manifest(name: str, block: str, rack: str, allocatable: dict[str, str]) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                **KWOK_SELECTOR,
                NODE_GROUP_LABEL: NODE_GROUP,
                BLOCK_LABEL: block,
                RACK_LABEL: rack,
                HOSTNAME_LABEL: name,
            },
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {},
        "status": {"allocatable": dict(allocatable), "capacity": dict(allocatable)},
    }


def nodes(shape: Shape) -> list[dict]:
    out = []
    for b in range(1, shape.blocks + 1):
        for r in range(1, shape.racks + 1):
            for h in range(1, shape.hosts + 1):
                out.append(
                    node_manifest(node_name(b, r, h), f"b{b}", f"b{b}-r{r}", shape.allocatable)
                )
    return out


def node_list(shape: Shape) -> dict:
    return {"apiVersion": "v1", "kind": "List", "items": nodes(shape)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--racks", type=int, default=2, help="racks per block")
    parser.add_argument("--hosts", type=int, default=2, help="hosts per rack")
    parser.add_argument("--cpu", default="8")
    parser.add_argument("--memory", default="16Gi")
    parser.add_argument("--pods", default="110")
    args = parser.parse_args(argv)
    shape = Shape(
        args.blocks,
        args.racks,
        args.hosts,
        {"cpu": args.cpu, "memory": args.memory, "pods": args.pods},
    )
    json.dump(node_list(shape), sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
