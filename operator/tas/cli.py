"""The `tas` command: `tas solve`, `tas operator`."""

from __future__ import annotations

import argparse
import sys

from tas import __version__


def _solve(args: argparse.Namespace) -> int:
    from tas import scenario

    return scenario.main(args.file, sys.stdout, sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tas", description="Topology-aware admission of batch Jobs, speaking Kueue's API."
    )
    parser.add_argument("--version", action="version", version=f"tas {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    solve = sub.add_parser("solve", help="place a scenario's workloads offline and print JSON")
    solve.add_argument("file", help="scenario YAML or JSON (see SCENARIO.md)")
    solve.set_defaults(func=_solve)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
