"""The image's two recipes stay one: `make image` (image/build.sh, no container engine) and the
Dockerfile build the same root filesystem with the same script, and give it the same Python,
wheel, entrypoint, user, environment and labels (image/image.env). `make image-test` checks the
built archive against the Dockerfile as well (e2e/test_image.py)."""

from __future__ import annotations

import re
import shlex
import tomllib

from e2e import image as recipe
from e2e.harness import ROOT
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import tas

ENV = recipe.image_env()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
BUILD_SH = (recipe.IMAGE_DIR / "build.sh").read_text()


def stages() -> tuple[recipe.Stage, recipe.Stage]:
    build, final = recipe.dockerfile()
    return build, final


def locked(name: str) -> dict[str, str]:
    """A requirements lock: name -> version, each line checked for its hash."""
    pins = {}
    for line in (recipe.IMAGE_DIR / name).read_text().splitlines():
        if line and not line.startswith("#"):
            requirement, hashes = line.split(" ", 1)
            assert re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", hashes), line
            pinned, _, version = requirement.partition("==")
            pins[canonicalize_name(pinned)] = version
    return pins


def debian_lock() -> dict[str, str]:
    lines = (recipe.IMAGE_DIR / "debian-packages.lock").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_both_build_the_root_filesystem_with_the_same_script_from_the_same_inputs() -> None:
    build, final = stages()
    assert build.base == ENV["DEBIAN_BUILD_IMAGE"]  # a build root, nothing more
    copied = set()
    for args in build.all("COPY"):
        *sources, destination = shlex.split(args)
        assert destination.startswith("/src/"), args
        copied.update(sources)
    assert copied == set(ENV["IMAGE_INPUTS"].split())
    assert "$IMAGE_INPUTS" in BUILD_SH  # build.sh copies the same list to the chroot's /src
    assert build.all("RUN") == ["bash /src/image/stage.sh build /rootfs"]
    assert "bash /src/image/stage.sh" in BUILD_SH and "args=(build /rootfs)" in BUILD_SH
    # The image is that root filesystem and nothing else: no layer of the build stage.
    assert final.base == "scratch"
    assert final.all("COPY") == [f"--from={build.name} /rootfs/ /"]
    assert not final.all("RUN")


def test_both_give_the_same_entrypoint_user_environment_and_labels() -> None:
    _, final = stages()
    assert final.user == ENV["IMAGE_USER"] == "65532:65532"
    assert final.entrypoint == [ENV["IMAGE_ENTRYPOINT"]]
    assert final.cmd == [ENV["IMAGE_CMD"]]
    assert final.workdir == "/" and "--config.workingdir=/" in BUILD_SH
    assert final.env == dict(v.split("=", 1) for v in ENV["IMAGE_ENV"].split())
    assert final.labels == {
        "org.opencontainers.image.title": ENV["IMAGE_TITLE"],
        "org.opencontainers.image.description": ENV["IMAGE_DESCRIPTION"],
        "org.opencontainers.image.licenses": ENV["IMAGE_LICENSES"],
        "org.opencontainers.image.version": tas.__version__,
    }
    for key in ("title", "description", "licenses", "version"):
        assert f'--config.label="org.opencontainers.image.{key}=' in BUILD_SH
    # The chart's `command: [tas, ...]` finds the entrypoint on the image's PATH.
    entrypoint = ENV["IMAGE_ENTRYPOINT"]
    assert entrypoint.endswith("/tas")
    assert final.env["PATH"].split(":")[0] == entrypoint.rsplit("/", 1)[0]


def test_both_use_the_distributions_python_that_the_package_supports() -> None:
    python = ENV["PYTHON"]
    assert re.fullmatch(r"python3\.\d+", python)
    pins = debian_lock()
    # The interpreter and its standard library, at one pinned Debian version.
    assert pins[f"{python}-minimal"] == pins[f"lib{python}-stdlib"]
    assert f"{python}-minimal" in ENV["DEBIAN_ROOTS"].split()
    minor = python.removeprefix("python")
    assert Requirement(f"x{PYPROJECT['project']['requires-python']}").specifier.contains(minor)
    assert PYPROJECT["tool"]["ruff"]["target-version"] == "py" + minor.replace(".", "")


def test_the_locks_pin_every_dependency_of_the_wheel_with_a_hash() -> None:
    runtime = locked("requirements.lock")
    for dependency in map(Requirement, PYPROJECT["project"]["dependencies"]):
        name = canonicalize_name(dependency.name)
        assert name in runtime, f"{name} is not in image/requirements.lock: `make image-lock`"
        assert dependency.specifier.contains(runtime[name]), f"{name} {runtime[name]}"
    assert "tas-operator" not in runtime  # built from the checkout, not downloaded
    build = locked("build-requirements.lock")
    for requirement in map(Requirement, PYPROJECT["build-system"]["requires"]):
        assert requirement.specifier.contains(build[canonicalize_name(requirement.name)])


def test_the_debian_lock_pins_the_roots_and_the_build_tools() -> None:
    pins = debian_lock()
    for name in ENV["DEBIAN_ROOTS"].split() + ENV["DEBIAN_BUILD_ONLY"].split():
        assert pins.get(name), f"{name} is not pinned: `make image-lock`"
    assert not set(ENV["DEBIAN_INSTALL_ONLY"].split()) & set(pins)
    assert not {"bash", "dash", "coreutils", "apt", "dpkg", "perl-base"} & set(pins)  # no shell


def test_the_docker_build_context_is_only_the_inputs() -> None:
    lines = [
        line
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert lines[0] == "*"
    assert {line[1:] for line in lines if line.startswith("!")} == set(ENV["IMAGE_INPUTS"].split())


def test_the_build_stage_is_taken_by_digest_and_image_lock_moves_it() -> None:
    """A tag can be moved to other bytes; a digest cannot."""
    build, _ = stages()
    suite = ENV["DEBIAN_SUITE"]
    assert re.fullmatch(rf"debian:{suite}-slim@sha256:[0-9a-f]{{64}}", build.base), build.base
    # `make image-lock` resolves the tag again and rewrites both places.
    lock = BUILD_SH.split("if [[ $MODE == lock ]]; then", 1)[1].split("\nfi\n", 1)[0]
    assert "skopeo inspect --raw" in lock and "sha256sum" in lock
    assert "DEBIAN_BUILD_IMAGE=" in lock and "Dockerfile" in lock
