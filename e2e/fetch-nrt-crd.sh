#!/usr/bin/env bash
# Refresh helm/tas-operator/files/noderesourcetopologies.yaml from the NodeResourceTopology
# API module on the Go module proxy (the chart installs it when TASNUMAZones is on).
# Usage: e2e/fetch-nrt-crd.sh [version]
set -euo pipefail
version="${1:-v0.1.2}"
module="github.com/k8stopologyawareschedwg/noderesourcetopology-api"
out="$(cd "$(dirname "$0")/.." && pwd)/helm/tas-operator/files/noderesourcetopologies.yaml"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
curl -fsSL -o "$work/m.zip" "${GOPROXY_URL:-https://proxy.golang.org}/$module/@v/$version.zip"
(cd "$work" && unzip -q m.zip)
{
  echo "# NodeResourceTopology CRD, unchanged from $module"
  echo "# $version, manifests/crd.yaml (Go module proxy; Apache-2.0). Installed by the chart when"
  echo "# TASNUMAZones is on (templates/numa-crd.yaml); refresh with e2e/fetch-nrt-crd.sh."
  cat "$work/$module@$version/manifests/crd.yaml"
} >"$out"
echo "wrote $out"
