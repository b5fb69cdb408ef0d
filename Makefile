# tas-operator. A fresh machine needs two commands: `make demo` and `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# `make test` runs its own cluster, on other ports than the one `make cluster-up`/`make demo` keep.
TEST_CLUSTER := TAS_CLUSTER_DIR=$(CURDIR)/.cluster/test TAS_API_PORT=17443 TAS_ETCD_PORT=13379
DEV_CLUSTER := TAS_CLUSTER_DIR=$(CURDIR)/.cluster/dev
# `make image-test` runs one more, so that it can run beside either.
IMAGE_API_PORT ?= 18443
IMAGE_ETCD_PORT ?= 14379
IMAGE_CLUSTER := TAS_CLUSTER_DIR=$(CURDIR)/.cluster/image TAS_API_PORT=$(IMAGE_API_PORT) TAS_ETCD_PORT=$(IMAGE_ETCD_PORT)
# `make e2e-integrations` runs one more, with the integrations' real upstream controllers.
INTEGRATIONS_API_PORT ?= 19443
INTEGRATIONS_ETCD_PORT ?= 15379
INTEGRATIONS_CLUSTER := TAS_CLUSTER_DIR=$(CURDIR)/.cluster/integrations TAS_API_PORT=$(INTEGRATIONS_API_PORT) TAS_ETCD_PORT=$(INTEGRATIONS_ETCD_PORT)

.PHONY: help venv lint fmt unit integration e2e test bins browser cluster-up cluster-down crds chart-data demo demo-down bench bench-kueue-go mutation clean \
	image image-lock image-test e2e-integrations docs

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

venv: $(BIN)/.installed  ## create .venv and install the package with its dev tools

lint: venv  ## ruff, formatting, import layering, types (mypy, configured in pyproject.toml)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

fmt: venv  ## format and fix what ruff can
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

unit: venv  ## unit tests (no cluster)
	$(BIN)/pytest tests/unit -q

bins:  ## build the control-plane binaries into the cache (only what is missing), copy the JobSet/LWS CRDs
	bash e2e/build-bins.sh manifests

# Integration and e2e tests share one test cluster; it is stopped afterwards unless KEEP_CLUSTER=1.
integration: venv bins  ## tests against a real kube-apiserver (local cluster, or KUBECONFIG)
	rc=0; $(TEST_CLUSTER) $(BIN)/pytest tests/integration -q -m integration || rc=$$?; \
	  [[ -n "$${KEEP_CLUSTER:-}$${KUBECONFIG:-}" ]] || $(TEST_CLUSTER) bash e2e/cluster.sh down; exit $$rc

# Debian's chromium, for e2e/test_view_browser.py (which skips without it); installed only when
# missing and we are root, quietly.
browser:  ## install Debian's chromium for the browser test, if missing (root)
	@command -v chromium >/dev/null || [[ "$$(id -u)" != 0 ]] || { \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends chromium >/dev/null; }

e2e: venv bins browser  ## end-to-end tests on the local cluster (scheduler, controller manager, kwok)
	rc=0; $(TEST_CLUSTER) $(BIN)/pytest e2e -q -m e2e || rc=$$?; \
	  [[ -n "$${KEEP_CLUSTER:-}$${KUBECONFIG:-}" ]] || $(TEST_CLUSTER) bash e2e/cluster.sh down; exit $$rc

test: lint bins browser unit  ## everything CI runs: lint, unit, integration and e2e
	rc=0; $(TEST_CLUSTER) $(BIN)/pytest tests/integration e2e -q -m "integration or e2e" --durations=25 || rc=$$?; \
	  [[ -n "$${KEEP_CLUSTER:-}$${KUBECONFIG:-}" ]] || $(TEST_CLUSTER) bash e2e/cluster.sh down; exit $$rc

cluster-up: bins  ## start the local cluster (idempotent); prints KUBECONFIG=... last
	@$(DEV_CLUSTER) bash e2e/cluster.sh up

cluster-down:  ## stop the local cluster and remove its data
	@$(DEV_CLUSTER) bash e2e/cluster.sh down

crds: venv  ## regenerate crds/ and the chart's CRDs from the pydantic models
	$(BIN)/python -m tas.api.crdgen crds --chart helm/tas-operator/templates/crds

chart-data: venv  ## regenerate the chart's list of GenericJob kinds from integrations/registry.py
	$(BIN)/python -m tas.integrations.chartdata helm/tas-operator/files/generic-jobs.yaml

demo: venv  ## local cluster, chart, operator, Kueue's example flow, and where every pod landed
	@$(DEV_CLUSTER) bash e2e/demo.sh

demo-down:  ## stop the demo's operator and cluster
	@$(DEV_CLUSTER) bash e2e/demo.sh down

image:  ## the operator's OCI image, no container engine: dist/tas-operator-<version>.oci.tar (root)
	bash image/build.sh

image-lock:  ## re-pin the image's Debian and Python packages (image/*.lock) to the newest
	bash image/build.sh --lock

# Not part of `make test`: it needs `make image` first (root, Debian's mirror and PyPI).
image-test: venv bins  ## run `tas operator` from the image's root filesystem against a local cluster
	rc=0; $(IMAGE_CLUSTER) $(BIN)/pytest e2e/test_image.py -q -m image || rc=$$?; \
	  [[ -n "$${KEEP_CLUSTER:-}$${KUBECONFIG:-}" ]] || $(IMAGE_CLUSTER) bash e2e/cluster.sh down; exit $$rc

# Not part of `make test`: building the seven controllers takes about 30 min cold on 2 cores
# (3-4 min each; see e2e/build-bins.sh).
e2e-integrations: venv  ## e2e with the integrations' real controllers (JobSet, LWS, training-operator, MPI, KubeRay, Trainer, AppWrapper)
	bash e2e/build-bins.sh integrations
	rc=0; $(INTEGRATIONS_CLUSTER) $(BIN)/pytest e2e -q -m integrations || rc=$$?; \
	  [[ -n "$${KEEP_CLUSTER:-}$${KUBECONFIG:-}" ]] || $(INTEGRATIONS_CLUSTER) bash e2e/cluster.sh down; exit $$rc

docs: venv  ## the documentation site into site/ (MkDocs, Material); a broken link is an error
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: venv  ## solver benchmark (reported, not asserted)
	$(BIN)/python bench/solver_bench.py

KUEUE_GO := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tas-operator/kueue-go/kueue-go
bench-kueue-go:  ## build the Kueue v0.17.0 TAS harness `make bench` compares with (needs Go)
	cd bench/kueue_go && go build -o $(KUEUE_GO) .

# Not part of `make test`: hours on two cores. Niced, one worker; ARGS="--module ungater/plan.py".
mutation: venv  ## mutation testing of the decision code (mutmut): score per module, bench/results/
	$(BIN)/python bench/mutation.py $(ARGS)

clean: cluster-down
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis dist build/mutation
