"""The image `make image` builds, run end to end without a container runtime (`make image-test`).

The archive is unpacked as a registry or a node would receive it; `tas` runs from its root
filesystem in a chroot, as the image's non-root user, on a read-only root with a tmpfs /tmp
(image/run.sh), against the test cluster with the chart installed, under the chart's
ServiceAccount token. Kueue's documented example must pass as it does with the host operator.

Marked `image`, not `e2e`: `make test` does not build the image (see the README).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tas
from e2e import chart, test_operator
from e2e import image as recipe
from e2e.conftest import apply_kueue_example
from e2e.harness import Cluster
from e2e.operator_process import OperatorProcess

pytestmark = pytest.mark.image


@pytest.fixture(scope="module")
def image():
    archive = recipe.archive_path()
    if not archive.exists():
        pytest.skip(f"{archive} is not built: run `make image`")
    unpacked = recipe.unpack(archive)
    yield unpacked
    unpacked.remove()


@pytest.fixture(scope="module")
def operator(cluster: Cluster, chart_installed, topology_nodes, image: recipe.Image):
    """The operator from the image, in place of the host's (conftest.py's `operator`)."""
    kubeconfig = chart.service_account_kubeconfig(cluster)
    proc = OperatorProcess(
        cluster,
        kubeconfig=kubeconfig,
        gates=chart.deployment_gates(cluster),
        command=image.command("tas", copy=[kubeconfig]),
    )
    proc.start()
    apply_kueue_example(cluster)
    yield proc
    proc.stop()


# ---- the archive -------------------------------------------------------------------------------


def test_the_archive_loads_with_skopeo_as_the_image_the_chart_names(image: recipe.Image):
    inspected = recipe.skopeo_inspect(image.archive)
    assert (inspected["Architecture"], inspected["Os"]) == ("amd64", "linux")
    assert inspected["Labels"]["org.opencontainers.image.version"] == tas.__version__
    assert re.fullmatch(
        r"[0-9a-f]{40}(-dirty)?", inspected["Labels"]["org.opencontainers.image.revision"]
    )
    assert inspected["Digest"] == image.index["manifests"][0]["digest"]
    assert len(inspected["Layers"]) == 1
    config = recipe.skopeo_inspect(image.archive, "--config")["config"]
    assert config == image.runtime
    # Pushed by tag; imported by containerd (kind, k3s) as the chart's default image.
    [entry] = image.index["manifests"]
    assert entry["annotations"]["org.opencontainers.image.ref.name"] == tas.__version__
    assert (
        entry["annotations"]["io.containerd.image.name"]
        == f"docker.io/library/{recipe.image_env()['IMAGE_TITLE']}:{tas.__version__}"
    )


def test_the_image_is_what_the_dockerfile_describes(image: recipe.Image):
    final = recipe.dockerfile()[-1]
    runtime = image.runtime
    assert runtime["User"] == final.user
    assert runtime["Entrypoint"] == final.entrypoint
    assert runtime["Cmd"] == final.cmd
    assert runtime["WorkingDir"] == final.workdir
    assert dict(v.split("=", 1) for v in runtime["Env"]) == final.env
    assert final.labels.items() <= runtime["Labels"].items()


def test_the_package_list_is_the_locks(image: recipe.Image):
    """What is in the image is what image/*.lock pin, and the list says so."""
    listed = (image.rootfs / "usr/share/doc/tas-operator/packages.txt").read_text().splitlines()
    beside = image.archive.with_name(image.archive.name.replace(".oci.tar", ".packages.txt"))
    assert beside.read_text().splitlines() == listed
    env = recipe.image_env()
    debian = {}
    for line in (recipe.IMAGE_DIR / "debian-packages.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, pinned = line.partition("=")
            debian[name] = pinned
    for name in env["DEBIAN_BUILD_ONLY"].split():
        del debian[name]
    assert {w[1]: w[2] for w in map(str.split, listed) if w[0] == "deb"} == debian
    pypi = dict(
        line.split(" ", 1)[0].split("==")
        for line in (recipe.IMAGE_DIR / "requirements.lock").read_text().splitlines()
        if line and not line.startswith("#")
    )
    pypi["tas-operator"] = tas.__version__
    assert {w[1]: w[2] for w in map(str.split, listed) if w[0] == "pypi"} == pypi
    status = image.rootfs / "var/lib/dpkg/status.d"
    assert sorted(p.name for p in status.iterdir()) == sorted(debian)


# ---- run from the root filesystem ----------------------------------------------------------------


def test_tas_version_runs_from_the_image(image: recipe.Image):
    result = image.run("tas", "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"tas {tas.__version__}"


def python(image: recipe.Image, *lines: str) -> list[str]:
    """The lines a program prints, run by the image's Python as the image's user."""
    result = image.run(recipe.image_env()["PYTHON"], "-c", "\n".join(lines))
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_the_image_has_no_shell_and_runs_unprivileged_on_a_read_only_root(image: recipe.Image):
    for shell in ("bin/sh", "bin/bash", "bin/dash", "usr/bin/sh", "usr/bin/bash"):
        assert not (image.rootfs / shell).exists(), shell
    uid, gid = image.runtime["User"].split(":")
    assert uid != "0"
    assert python(
        image,
        "import os",
        "print(os.getuid(), os.getgid())",
        "try: open('/opt/tas/x', 'w')",
        "except OSError as e: print(e.strerror)",
        "open('/tmp/x', 'w').close()",
        "print('tmp writable')",
    ) == [f"{uid} {gid}", "Read-only file system", "tmp writable"]


def test_every_module_of_the_operator_imports_from_precompiled_bytecode(image: recipe.Image):
    """Every module loads on the image's Python, from bytecode compiled at build time (none
    could be written on the read-only root)."""
    [count, version, stale] = python(
        image,
        "import importlib, os, pkgutil, sys, tas",
        "names = [m.name for m in pkgutil.walk_packages(tas.__path__, 'tas.')]",
        "for name in names: importlib.import_module(name)",
        "import kopf, aiohttp, cryptography.x509, pydantic, orjson, yaml, prometheus_client",
        "cached = [getattr(m, '__cached__', None) for m in list(sys.modules.values())]",
        "print(len(names), sys.version.split()[0], [c for c in cached if c and not os.path.exists(c)])",
    )[0].split(" ", 2)
    assert int(count) > 20
    assert version.startswith(recipe.image_env()["PYTHON"].removeprefix("python") + ".")
    assert stale == "[]"


def test_kueue_example_runs_from_the_image(cluster: Cluster, operator: OperatorProcess):
    test_operator.test_kueue_example_job_is_admitted_and_every_pod_runs_in_its_domain(
        cluster, operator
    )


def test_the_operator_runs_as_the_image_user_in_its_root(
    operator: OperatorProcess, image: recipe.Image
):
    pid = operator.proc.pid
    uid, gid = image.runtime["User"].split(":")
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    assert status["Uid"].split() == [uid] * 4
    assert status["Gid"].split() == [gid] * 4
    assert Path(f"/proc/{pid}/root").resolve() == image.rootfs.resolve()
    mounts = {
        fields[4]: (fields[5], line.split(" - ")[1].split()[0])
        for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
        for fields in [line.split()]
    }
    assert "ro" in mounts["/"][0].split(",")
    assert mounts["/tmp"][1] == "tmpfs"


def test_the_image_operators_webhook_refuses_an_invalid_job(
    cluster: Cluster, namespace: str, user_queue: str
):
    test_operator.test_invalid_topology_annotation_is_refused_by_the_webhook(
        cluster, namespace, user_queue, 2, {"podset-slice-size": "2"}, "may not be set without"
    )
