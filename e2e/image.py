"""The image `make image` builds: its recipe (image/image.env, the Dockerfile), its archive
unpacked, and commands run from its root filesystem without a container runtime (image/run.sh:
chroot, as the image's user, on a read-only root with a tmpfs /tmp)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2e.harness import ROOT

IMAGE_DIR = ROOT / "image"
RUN_SH = IMAGE_DIR / "run.sh"


# ---- the recipe ----------------------------------------------------------------------------------


def image_env() -> dict[str, str]:
    """image/image.env, as bash reads it (KEY=value, values optionally in double quotes)."""
    env = {}
    for line in (IMAGE_DIR / "image.env").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            [env[key.strip()]] = shlex.split(value) or [""]
    return env


def version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def archive_path() -> Path:
    return ROOT / "dist" / f"{image_env()['IMAGE_TITLE']}-{version()}.oci.tar"


@dataclass
class Stage:
    """One stage of a Dockerfile: its base and instructions, and the config they set."""

    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    user: str | None = None
    workdir: str | None = None
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None

    def all(self, instruction: str) -> list[str]:
        return [args for name, args in self.instructions if name == instruction]


def _pairs(args: str) -> dict[str, str]:
    return dict(word.split("=", 1) for word in shlex.split(args))


def dockerfile(path: Path = ROOT / "Dockerfile") -> list[Stage]:
    """The stages of a Dockerfile (the subset of the syntax this project's uses)."""
    logical, current = [], ""
    for line in path.read_text().splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line.rstrip().removesuffix("\\") + " "
        if not line.rstrip().endswith("\\"):
            logical.append(current.strip())
            current = ""
    stages: list[Stage] = []
    for text in logical:
        instruction, _, args = text.partition(" ")
        instruction, args = instruction.upper(), args.strip()
        if instruction == "FROM":
            base, _, name = args.partition(" AS ")
            stages.append(Stage(base=base.strip(), name=name.strip() or None))
            continue
        stage = stages[-1]
        stage.instructions.append((instruction, args))
        if instruction == "ENV":
            stage.env.update(_pairs(args))
        elif instruction == "LABEL":
            stage.labels.update(_pairs(args))
        elif instruction == "USER":
            stage.user = args
        elif instruction == "WORKDIR":
            stage.workdir = args
        elif instruction in ("ENTRYPOINT", "CMD"):
            setattr(stage, instruction.lower(), json.loads(args))
    return stages


# ---- the archive ---------------------------------------------------------------------------------


def skopeo_inspect(archive: Path, *flags: str) -> dict[str, Any]:
    out = subprocess.run(
        ["skopeo", "inspect", *flags, f"oci-archive:{archive}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@dataclass
class Image:
    """An archive unpacked into a scratch directory: the OCI layout, and its root filesystem."""

    archive: Path
    directory: Path
    index: dict[str, Any]
    manifest: dict[str, Any]
    config: dict[str, Any]  # the image configuration (architecture, os, config, history, ...)

    @property
    def rootfs(self) -> Path:
        return self.directory / "bundle" / "rootfs"

    @property
    def runtime(self) -> dict[str, Any]:
        """What a container runtime runs: User, Env, Entrypoint, Cmd, WorkingDir, Labels."""
        return self.config["config"]

    def command(
        self,
        *command: str,
        copy: Iterable[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> list[str]:
        """`command` from the root filesystem, as the image's user with the image's environment
        (and `env`); `copy` names host files under /tmp the command needs (a kubeconfig)."""
        variables = [*self.runtime.get("Env", []), *(f"{k}={v}" for k, v in (env or {}).items())]
        return [
            "bash",
            str(RUN_SH),
            "--rootfs",
            str(self.rootfs),
            "--user",
            self.runtime["User"],
            *(arg for variable in variables for arg in ("--env", variable)),
            *(arg for path in copy for arg in ("--copy", path)),
            "--",
            *command,
        ]

    def run(self, *command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*command), capture_output=True, text=True, timeout=timeout
        )

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def _blob(layout: Path, digest: str) -> dict[str, Any]:
    algorithm, _, hexdigest = digest.partition(":")
    return json.loads((layout / "blobs" / algorithm / hexdigest).read_text())


def unpack(archive: Path) -> Image:
    """The archive's layout (an OCI archive is a tar of one), and its root filesystem as umoci
    unpacks it: every layer applied, digests checked, owners and modes kept (needs root)."""
    directory = Path(tempfile.mkdtemp(prefix="tas-image-"))
    try:
        layout = directory / "layout"
        layout.mkdir()
        subprocess.run(["tar", "-C", str(layout), "-xf", str(archive)], check=True, timeout=300)
        index = json.loads((layout / "index.json").read_text())
        [entry] = index["manifests"]
        tag = entry["annotations"]["org.opencontainers.image.ref.name"]
        subprocess.run(
            ["umoci", "unpack", "--image", f"{layout}:{tag}", str(directory / "bundle")],
            check=True,
            capture_output=True,
            timeout=300,
        )
        manifest = _blob(layout, entry["digest"])
        config = _blob(layout, manifest["config"]["digest"])
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return Image(archive, directory, index, manifest, config)
