#!/usr/bin/env bash
# `make demo` / `make demo-down`: see e2e/demo.py.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [[ "${1:-}" == down ]]; then
  .venv/bin/python -m e2e.demo down
  bash e2e/cluster.sh down
  exit 0
fi
bash e2e/build-bins.sh >/dev/null  # prints progress on stderr: which binary, elapsed time
.venv/bin/python -m e2e.demo
