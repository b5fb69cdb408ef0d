"""The README and the documentation site: short, navigable, no broken link, nothing internal.

`make docs` builds the site with `mkdocs build --strict`; this runs the same build (mkdocs is a
dev dependency, so a missing mkdocs fails here rather than skips).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
CHART_NOTES = ROOT / "helm" / "tas-operator" / "templates" / "NOTES.txt"
MAX_README_LINES = 200
FIRST_SCREEN = 60  # lines: where a newcomer must already see how to install

# What a reader outside the project cannot follow: our own issue numbers (`#27`, "issue 27";
# Kueue's public ones read `kueue#8157`) and the names of the seed documents we started from.
INTERNAL = {
    "an issue number": re.compile(r"(?<![\w/&])#\d+\b"),
    "an issue by name": re.compile(r"\bissues? \d+\b", re.IGNORECASE),
    "a seed document": re.compile(r"\bseed 0\d\d\b|\b\d{3}_[0-9a-f]{16}\b", re.IGNORECASE),
    "a file not in the repository": re.compile(r"\bSCENARIO\.md\b"),
}
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def user_facing() -> list[Path]:
    return [README, CHART_NOTES, *sorted(DOCS.rglob("*.md"))]


def nav_pages(entries: object) -> list[str]:
    """Every page the mkdocs.yml nav names, however deep."""
    if isinstance(entries, str):
        return [entries]
    if isinstance(entries, list):
        return [page for entry in entries for page in nav_pages(entry)]
    if isinstance(entries, dict):
        return [page for value in entries.values() for page in nav_pages(value)]
    return []


def test_the_site_builds_strictly_with_no_broken_link(tmp_path: Path) -> None:
    site = tmp_path / "site"
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(build, cwd=ROOT, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-4000:]
    assert (site / "index.html").exists()
    assert (site / "reference" / "feature-gates" / "index.html").exists()


def test_every_docs_page_is_in_the_navigation() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = nav_pages(config["nav"])
    files = sorted(str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md"))
    assert sorted(set(pages)) == files
    assert len(pages) == len(set(pages)), "a page appears twice in the nav"


def test_the_contributing_section_has_the_integration_recipe() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    sections = {key: value for entry in config["nav"] for key, value in entry.items()}
    assert "integrations.md" in nav_pages(sections["Contributing"])


def test_the_readme_is_short() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"


def test_the_readme_shows_install_on_its_first_screen_and_a_working_example() -> None:
    text = README.read_text()
    first_screen = "\n".join(text.splitlines()[:FIRST_SCREEN])
    assert "make demo" in first_screen and "make test" in first_screen
    assert "helm install" in first_screen
    documents = re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)
    kinds = [doc["kind"] for block in documents for doc in yaml.safe_load_all(block) if doc]
    assert kinds == ["Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue", "Job"]
    assert "kueue.x-k8s.io/podset-required-topology" in text


def test_the_readme_links_resolve() -> None:
    targets = [t for t in MARKDOWN_LINK.findall(README.read_text()) if "://" not in t]
    assert targets
    missing = [t for t in targets if not (ROOT / t.split("#")[0]).exists()]
    assert not missing


@pytest.mark.parametrize("path", user_facing(), ids=lambda p: str(p.relative_to(ROOT)))
def test_user_facing_text_names_nothing_internal(path: Path) -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {what}: {match.group(0)!r}"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        for what, pattern in INTERNAL.items()
        for match in pattern.finditer(line)
    ]
    assert not found


def test_the_internal_patterns_catch_what_they_are_for() -> None:
    caught = ["see #27", "(issue 18's target)", "seed 001's protocol", "000_940b8ed8ed15ed22.txt"]
    passed = ["kueue#8157", "[x](#section)", "--seed 3", "seeds 1-6", "&#8212;"]
    for text in caught:
        assert any(p.search(text) for p in INTERNAL.values()), text
    for text in passed:
        assert not any(p.search(text) for p in INTERNAL.values()), text


def test_uninstall_is_said_to_keep_the_crds() -> None:
    """The chart keeps its CRDs (helm.sh/resource-policy: keep); the texts must say so."""
    crds = sorted((ROOT / "helm" / "tas-operator" / "templates" / "crds").glob("*.yaml"))
    assert crds
    for crd in crds:
        assert "helm.sh/resource-policy: keep" in crd.read_text(), crd.name
    for path in (README, CHART_NOTES, DOCS / "tasks" / "install.md"):
        text = " ".join(path.read_text().replace("`", "").replace("*", "").split())
        assert re.search(r"helm uninstall [^.]*keeps (the CRDs|them)", text), path.name


def test_every_metric_is_in_the_metrics_reference() -> None:
    from prometheus_client import Counter, Gauge, Histogram

    from tas import metrics

    page = (DOCS / "reference" / "metrics.md").read_text()
    families = [m for m in vars(metrics).values() if isinstance(m, Counter | Gauge | Histogram)]
    assert families
    for family in families:
        assert f"`{family._name}" in page, family._name


def test_the_install_commands_name_the_current_version() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    for path in (README, DOCS / "tasks" / "install.md"):
        archives = re.findall(r"tas-operator-(\d+\.\d+\.\d+)\.oci\.tar", path.read_text())
        assert archives, path.name
        assert set(archives) == {version}, path.name


def test_every_command_and_operator_flag_is_in_the_cli_reference() -> None:
    from tas import cli

    page = (DOCS / "reference" / "cli.md").read_text()
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(commands.choices) >= {"operator", "solve", "simulate"}
    for name, command in commands.choices.items():
        assert f"`tas {name}" in page, name
        if name == "operator":
            flags = [o for a in command._actions for o in a.option_strings if o.startswith("--")]
            for flag in set(flags) - {"--help"}:
                switch = "--[no-]" + flag.removeprefix("--").removeprefix("no-")  # --[no-]x
                assert flag in page or switch in page, flag


@pytest.mark.parametrize("path", sorted(DOCS.rglob("*.md")), ids=lambda p: str(p.relative_to(DOCS)))
def test_tables_and_lists_stand_apart_from_paragraphs(path: Path) -> None:
    """Python-Markdown (unlike GitHub) takes a paragraph right after a table into the table, and
    a list right after a paragraph into the paragraph."""
    lines = path.read_text().splitlines()
    fenced, problems = False, []
    for number, (line, after) in enumerate(zip(lines, [*lines[1:], ""], strict=True), 1):
        fenced ^= line.startswith("```")
        if fenced:
            continue
        if line.startswith("|") and after.strip() and not after.startswith("|"):
            problems.append(f"{number}: a table runs into the next line")
        before = lines[number - 2] if number > 1 else ""
        starts_list = re.match(r"(- |\d+\. )", line)
        if starts_list and before.strip() and not re.match(r"(\s*- |\s*\d+\. |\s+\S)", before):
            problems.append(f"{number}: a list starts inside a paragraph")
    assert not problems
