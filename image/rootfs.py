"""The operator image's root filesystem, assembled inside a Debian build root (image/stage.sh).

    rootfs.py build ROOTFS   build the wheel, install it with the locked dependencies into the
                             venv /opt/tas, and copy into ROOTFS only what runs: the files of
                             the locked Debian packages (their dependency closure, docs left
                             out), the venv, a CA bundle, the user, precompiled bytecode
    rootfs.py lock           resolve the newest versions and rewrite image/*.lock

Runs on the build root's own Python, which is the image's (the same locked Debian package), so
the bytecode compiled here is what the image runs. Standard library only. No shell, apt, dpkg
or pip goes into the image: pip runs from Debian's pip wheel and is never installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from importlib.metadata import distributions
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent  # the checkout's copy: pyproject.toml, README.md, operator/, image/
WORK = Path("/build")  # scratch in the build root; never copied into the image
VENV = Path("/opt/tas")  # the image's venv, built at the path it has in the image
PIP_WHEELS = Path("/usr/share/python-wheels")  # Debian's python3-pip-whl
NONROOT = 65532
DEBIAN_LOCK = HERE / "debian-packages.lock"
REQUIREMENTS_LOCK = HERE / "requirements.lock"
BUILD_REQUIREMENTS_LOCK = HERE / "build-requirements.lock"

# Left out of every package: documentation, translations, charset converters (Python has its
# own codecs). The copyright files stay. A Debian "slim" image leaves out a subset of these.
EXCLUDED = (
    "/usr/share/doc/",
    "/usr/share/man/",
    "/usr/share/info/",
    "/usr/share/groff/",
    "/usr/share/lintian/",
    "/usr/share/linda/",
    "/usr/share/locale/",
    "/usr/share/bug/",
    "/usr/share/doc-base/",
    "/usr/lib/x86_64-linux-gnu/gconv/",
)
KEPT = re.compile(r"^/usr/share/doc/[^/]+/copyright$")
# What the venv needs no longer once built: activation scripts (they need a shell), headers.
VENV_LEFT_OUT = {"bin/activate", "bin/activate.csh", "bin/activate.fish", "bin/Activate.ps1"}
# Parts of numpy the operator never imports (its test suites, the Fortran and build tools,
# the C headers): about a third of its size.
NUMPY = "lib/python3.11/site-packages/numpy"
VENV_LEFT_OUT |= {f"{NUMPY}/{d}" for d in ("f2py", "distutils", "_core/include", "_pyinstaller")}
LEFT_OUT_DIRS_UNDER = {NUMPY: {"tests"}}  # under this path, no directory of these names


def image_env() -> dict[str, str]:
    """image/image.env: KEY=value lines, values optionally in double quotes."""
    env = {}
    for line in (HERE / "image.env").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            env[key.strip()] = value.strip().strip('"')
    return env


def run(*cmd: str | Path, **kwargs) -> subprocess.CompletedProcess[str]:
    print("+", " ".join(map(str, cmd)), file=sys.stderr, flush=True)
    return subprocess.run([str(c) for c in cmd], check=True, text=True, **kwargs)


# ---- Debian ----------------------------------------------------------------------------------


def installed() -> dict[str, dict[str, str]]:
    fields = ("Package", "Version", "Architecture", "Pre-Depends", "Depends", "Provides")
    out = run(
        "dpkg-query",
        "-W",
        "-f",
        "\t".join(f"${{{f}}}" for f in fields) + "\n",
        capture_output=True,
    ).stdout
    packages = {}
    for line in out.splitlines():
        values = dict(zip(fields, line.split("\t"), strict=True))
        packages[values["Package"]] = values
    return packages


def _names(field: str) -> list[list[str]]:
    """A Depends field as groups of alternatives, package names only."""
    groups = []
    for group in filter(None, (g.strip() for g in field.split(","))):
        groups.append([alt.split()[0].split(":")[0] for alt in group.split("|")])
    return groups


def closure(roots: Iterable[str], install_only: set[str]) -> list[str]:
    """The installed packages that `roots` need at run time: Pre-Depends and Depends, the first
    installed alternative of each, minus what only maintainer scripts use."""
    packages = installed()
    provided = {
        virtual: name
        for name, info in packages.items()
        for group in _names(info["Provides"])
        for virtual in group
    }
    wanted, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        if name not in packages:
            raise SystemExit(f"rootfs.py: {name} is not installed in the build root")
        wanted.add(name)
        for group in _names(packages[name]["Pre-Depends"]) + _names(packages[name]["Depends"]):
            real = [alt if alt in packages else provided.get(alt) for alt in group]
            if any(alt in install_only for alt in group + real):
                continue
            choice = next((alt for alt in real if alt), None)
            if choice is None:
                raise SystemExit(f"rootfs.py: no alternative of {group} ({name}) is installed")
            todo.append(choice)
    return sorted(wanted)


def read_lock(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("=")
            pins[name] = version
    return pins


def copy_entry(path: str, rootfs: Path) -> None:
    """One path that dpkg lists for a package, copied as it is in the build root."""
    if path.startswith(EXCLUDED) and not KEPT.match(path):
        return
    target = rootfs / path.lstrip("/")
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise SystemExit(f"rootfs.py: dpkg lists {path}, which is not in the build root") from None
    if stat.S_ISLNK(info.st_mode):
        if not os.path.lexists(target):  # the merged-/usr links (/lib -> usr/lib) exist already
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(path), target)
    elif stat.S_ISDIR(info.st_mode):
        target.mkdir(parents=True, exist_ok=True)
        os.chmod(target, stat.S_IMODE(info.st_mode))
    elif stat.S_ISREG(info.st_mode):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        os.chmod(target, stat.S_IMODE(info.st_mode))
    else:
        raise SystemExit(f"rootfs.py: {path} is neither a file, a directory nor a link")
    os.lchown(target, info.st_uid, info.st_gid)


def copy_packages(names: list[str], rootfs: Path) -> None:
    for top in ("bin", "lib", "lib32", "lib64", "libx32", "sbin"):  # merged /usr, as the root's
        if os.path.islink(f"/{top}"):
            link = os.readlink(f"/{top}")
            os.symlink(link, rootfs / top)
            (rootfs / top).parent.joinpath(link).mkdir(parents=True, exist_ok=True)
    status = rootfs / "var/lib/dpkg/status.d"
    status.mkdir(parents=True)
    for name in names:
        listed = run("dpkg-query", "-L", name, capture_output=True).stdout.splitlines()
        for path in listed:
            if path.startswith("/") and path != "/.":  # not dpkg's notes on diversions
                copy_entry(path, rootfs)
        # One stanza per package, where image scanners (trivy, syft, grype) look for them.
        (status / name).write_text(run("dpkg-query", "-s", name, capture_output=True).stdout)


# ---- Python ----------------------------------------------------------------------------------


def pip_wheel() -> Path:
    [wheel] = PIP_WHEELS.glob("pip-*.whl")
    return wheel


def pip(python: Path | str, *args: str | Path, **kwargs) -> subprocess.CompletedProcess[str]:
    """Debian's pip, run from its wheel by `python`: it installs into that Python's venv."""
    return run(python, pip_wheel() / "pip", "--disable-pip-version-check", *args, **kwargs)


def venv(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    run(f"/usr/bin/{image_env()['PYTHON']}", "-m", "venv", "--without-pip", path)
    return path / "bin" / "python3"


def build_wheel() -> Path:
    """The operator's wheel from /src, with the locked build backend (no build isolation)."""
    python = venv(WORK / "venv-build")
    pip(python, "install", "--no-deps", "--require-hashes", "-r", BUILD_REQUIREMENTS_LOCK)
    dist = WORK / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    shutil.rmtree(SRC / "build", ignore_errors=True)
    pip(python, "wheel", "--no-deps", "--no-build-isolation", "-w", dist, SRC)
    [wheel] = dist.glob("*.whl")
    return wheel


def resolve(python: Path, *requirements: str | Path) -> list[dict]:
    """What pip would install for `requirements` from PyPI now: wheels only, with hashes."""
    report = WORK / "report.json"
    pip(
        python,
        "install",
        "--dry-run",
        "--ignore-installed",
        "--only-binary=:all:",
        "--report",
        report,
        *requirements,
    )
    return json.loads(report.read_text())["install"]


def normalize(name: str) -> str:
    """A distribution's name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def write_requirements(path: Path, entries: list[dict], skip: str = "") -> None:
    lines = [
        "# Pinned by `make image-lock` (image/rootfs.py lock): the wheels for CPython 3.11 on",
        "# linux x86_64, with their hashes. `make image` installs exactly these.",
    ]
    for entry in sorted(entries, key=lambda e: e["metadata"]["name"].lower()):
        name, version = normalize(entry["metadata"]["name"]), entry["metadata"]["version"]
        if name == skip:
            continue
        digest = entry["download_info"]["archive_info"]["hash"].replace("=", ":", 1)
        lines.append(f"{name}=={version} --hash={digest}")
    path.write_text("\n".join(lines) + "\n")


def lock() -> None:
    env = image_env()
    names = closure(env["DEBIAN_ROOTS"].split(), set(env["DEBIAN_INSTALL_ONLY"].split()))
    packages = installed()
    names += env["DEBIAN_BUILD_ONLY"].split()
    header = [
        f"# Pinned by `make image-lock`: the Debian {env['DEBIAN_SUITE']} packages of the image",
        "# (the closure of DEBIAN_ROOTS in image.env) and of the build (DEBIAN_BUILD_ONLY).",
    ]
    DEBIAN_LOCK.write_text(
        "\n".join(header + [f"{n}={packages[n]['Version']}" for n in sorted(names)]) + "\n"
    )
    build_requires = tomllib.loads((SRC / "pyproject.toml").read_text())["build-system"]
    python = venv(WORK / "venv-lock")
    write_requirements(BUILD_REQUIREMENTS_LOCK, resolve(python, *build_requires["requires"]))
    wheel = build_wheel()
    write_requirements(REQUIREMENTS_LOCK, resolve(python, wheel), skip="tas-operator")


def install_venv() -> Path:
    """/opt/tas: the locked dependencies, then the operator's wheel, from local files only."""
    wheel = build_wheel()
    wheels = WORK / "wheels"
    pip(
        sys.executable,
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--require-hashes",
        "-d",
        wheels,
        "-r",
        REQUIREMENTS_LOCK,
    )
    python = venv(VENV)
    offline = ("install", "--no-index", "--find-links", wheels, "--no-deps", "--no-compile")
    pip(python, *offline, "--require-hashes", "-r", REQUIREMENTS_LOCK)
    pip(python, *offline, wheel)
    pip(python, "check")  # the lock covers every dependency the wheel declares
    return wheel


# ---- the image -------------------------------------------------------------------------------


def copy_venv(rootfs: Path) -> None:
    def ignore(directory: str, names: list[str]) -> set[str]:
        rel = os.path.relpath(directory, VENV)
        left_out = {n for n in names if os.path.normpath(f"{rel}/{n}") in VENV_LEFT_OUT}
        for root, dirs in LEFT_OUT_DIRS_UNDER.items():
            if rel == root or rel.startswith(root + "/"):
                left_out |= dirs & set(names)
        return left_out | ({"include"} if rel == "." else set()) | {"__pycache__"} & set(names)

    shutil.copytree(VENV, rootfs / VENV.relative_to("/"), symlinks=True, ignore=ignore)


def add_user_and_directories(rootfs: Path) -> None:
    """The non-root user (numeric, so that runAsNonRoot can check it), and the directories a
    container runtime mounts over: /tmp is the chart's emptyDir."""
    etc = rootfs / "etc"
    (etc / "passwd").write_text(
        "root:x:0:0:root:/root:/sbin/nologin\n"
        f"nonroot:x:{NONROOT}:{NONROOT}:nonroot:/home/nonroot:/sbin/nologin\n"
    )
    (etc / "group").write_text(f"root:x:0:\nnonroot:x:{NONROOT}:\n")
    for path, mode in (("tmp", 0o1777), ("proc", 0o555), ("sys", 0o555), ("dev", 0o755)):
        (rootfs / path).mkdir(exist_ok=True)
        os.chmod(rootfs / path, mode)
    home = rootfs / "home" / "nonroot"
    home.mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o700)
    os.chown(home, NONROOT, NONROOT)
    # The CA bundle ca-certificates' maintainer script writes (SSL_CERT_FILE names it).
    bundle = dict(v.split("=", 1) for v in image_env()["IMAGE_ENV"].split())["SSL_CERT_FILE"]
    (rootfs / bundle.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(bundle, rootfs / bundle.lstrip("/"))


def compile_bytecode(rootfs: Path) -> None:
    """Bytecode for every module, checked against nothing at run time (the root filesystem is
    read-only and never changes), with the paths the image has."""
    python_dir = f"usr/lib/{image_env()['PYTHON']}"
    run(
        sys.executable,
        "-m",
        "compileall",
        "-q",
        "-j",
        "0",
        "--invalidation-mode",
        "unchecked-hash",
        "-s",
        rootfs,
        "-p",
        "/",
        rootfs / python_dir,
        rootfs / VENV.relative_to("/"),
    )


def package_list(rootfs: Path, debian: list[str], wheel: Path) -> str:
    """The image's bill of materials, one package a line: what two builds must agree on."""
    packages = installed()
    lines = [f"# {wheel.name}: every package whose files are in the image"]
    lines += [
        f"deb {n} {packages[n]['Version']} {packages[n]['Architecture']}" for n in sorted(debian)
    ]
    [site] = (rootfs / VENV.relative_to("/") / "lib").glob("python3*/site-packages")
    dists = {(normalize(d.metadata["Name"]), d.version) for d in distributions(path=[str(site)])}
    lines += [f"pypi {name} {version}" for name, version in sorted(dists)]
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    lines.append(f"wheel {wheel.name} sha256:{digest}")
    return "\n".join(lines) + "\n"


def set_timestamps(rootfs: Path) -> None:
    """Every timestamp is SOURCE_DATE_EPOCH, so that two builds give the same layer."""
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    for directory, dirs, files in os.walk(rootfs, topdown=False):
        for name in files + dirs:
            os.utime(os.path.join(directory, name), (epoch, epoch), follow_symlinks=False)
    os.utime(rootfs, (epoch, epoch))


def build(rootfs: Path) -> None:
    env = image_env()
    pins = read_lock(DEBIAN_LOCK)
    build_only = set(env["DEBIAN_BUILD_ONLY"].split())
    debian = closure(env["DEBIAN_ROOTS"].split(), set(env["DEBIAN_INSTALL_ONLY"].split()))
    if sorted(debian) != sorted(set(pins) - build_only):
        raise SystemExit(
            "rootfs.py: image/debian-packages.lock no longer matches the packages' dependencies "
            f"(closure {debian}); run `make image-lock`"
        )
    wheel = install_venv()
    shutil.rmtree(rootfs, ignore_errors=True)
    rootfs.mkdir(parents=True)
    os.chmod(rootfs, 0o755)
    copy_packages(debian, rootfs)
    copy_venv(rootfs)
    add_user_and_directories(rootfs)
    compile_bytecode(rootfs)
    listing = package_list(rootfs, debian, wheel)
    doc = rootfs / "usr/share/doc/tas-operator"
    doc.mkdir(parents=True, exist_ok=True)
    (doc / "packages.txt").write_text(listing)
    set_timestamps(rootfs)


def main(argv: list[str]) -> None:
    if argv[:1] == ["lock"]:
        lock()
    elif argv[:1] == ["build"] and len(argv) == 2:
        build(Path(argv[1]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
