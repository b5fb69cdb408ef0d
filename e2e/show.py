"""Print the cluster's topology nodes by block and rack, with the pods on each node."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict

from e2e.topology import BLOCK_LABEL, RACK_LABEL


def kubectl_json(kubectl: str, kubeconfig: str, *args: str) -> dict:
    out = subprocess.run(
        [kubectl, f"--kubeconfig={kubeconfig}", *args, "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def render(nodes: list[dict], pods: list[dict]) -> str:
    pods_on: dict[str, list[str]] = defaultdict(list)
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if node and pod["status"].get("phase") in ("Pending", "Running"):
            pods_on[node].append(f"{pod['metadata']['namespace']}/{pod['metadata']['name']}")
    tree: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for node in nodes:
        labels = node["metadata"]["labels"]
        tree[labels.get(BLOCK_LABEL, "?")][labels.get(RACK_LABEL, "?")].append(node)
    lines = []
    for block in sorted(tree):
        lines.append(f"block {block}")
        for rack in sorted(tree[block]):
            cells = []
            for node in sorted(tree[block][rack], key=lambda n: n["metadata"]["name"]):
                name = node["metadata"]["name"]
                ready = any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in node["status"].get("conditions", [])
                )
                cells.append(f"{name}{'' if ready else ' (NotReady)'}: {len(pods_on[name])} pod(s)")
            lines.append(f"  rack {rack}: " + " | ".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--kubectl", default="kubectl")
    args = parser.parse_args(argv)
    nodes = kubectl_json(args.kubectl, args.kubeconfig, "get", "nodes", "-l", "type=kwok")["items"]
    pods = kubectl_json(args.kubectl, args.kubeconfig, "get", "pods", "-A")["items"]
    print(render(nodes, pods))
    return 0


if __name__ == "__main__":
    sys.exit(main())
