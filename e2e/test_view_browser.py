"""The topology view in a real browser (Debian's chromium, headless, driven by Playwright)
against the operator on the local cluster: an admitted Job's hosts show its colour, a pending
Job's reason shows as its condition says it, and deleting the Job frees its hosts on the page
within 2 s. A screenshot is kept in build/e2e/ (its path is printed)."""

from __future__ import annotations

import shutil
import time
import urllib.request

import pytest

from e2e import jobs
from e2e.harness import ROOT, Cluster, wait_for
from e2e.topology import RACK_LABEL
from tas.view.html import workload_colour

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium")
REQUIRED = jobs.PREFIX + "podset-required-topology"
FLAVOR = "tas-flavor"  # Kueue's example flavor, which the operator fixture applies
FREED_WITHIN = 2.0  # seconds from the Workload's deletion to hosts drawn free
SCREENSHOT = ROOT / "build" / "e2e" / "view.png"


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (`make browser` installs it, as root)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # root in a container has no user namespaces for chromium's sandbox
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--headless=new", "--no-sandbox"]
        )
        yield launched
        launched.close()


def served(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def uses_of(page, workload: str) -> dict[str, str]:
    """Host -> the style of the workload's segment on it, as the page shows now."""
    return page.evaluate(
        """key => Object.fromEntries([...document.querySelectorAll('.host .use[data-workload]')]
            .filter(s => s.dataset.workload === key)
            .map(s => [s.closest('.host').dataset.host, s.getAttribute('style')]))""",
        workload,
    )


def reason_on_page(page, workload: str) -> str | None:
    row = page.locator(f'[id="wl/{workload}"] .reason')
    return row.inner_text() if row.count() else None


def pending_message(cluster: Cluster, namespace: str, job: str) -> str | None:
    condition = jobs.condition(jobs.workload_of(cluster, namespace, job), "QuotaReserved")
    return condition["message"] if condition and condition["status"] == "False" else None


def test_the_page_shows_admissions_and_reasons_and_frees_hosts_on_deletion(
    cluster: Cluster, namespace: str, user_queue: str, operator, browser
):
    cluster.apply(
        jobs.job("seen", user_queue, pods=4, annotations={REQUIRED: RACK_LABEL}), namespace
    )
    # 20 one-cpu pods in one rack of 2 x 8 cpus: never fits, waits with a reason
    cluster.apply(
        jobs.job("waiting", user_queue, pods=20, annotations={REQUIRED: RACK_LABEL}), namespace
    )
    admitted = jobs.wait_admitted(cluster, namespace, "seen")
    key = f"{namespace}/{admitted['metadata']['name']}"
    hosts = set(jobs.assignment_counts(admitted))
    wait_for(lambda: served(operator.view_url), timeout=30, what="the view served")

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(operator.view_url)
    page.wait_for_selector(f'[id="host/{FLAVOR}/{next(iter(hosts))}"]', timeout=10_000)
    shown = wait_for(
        lambda: (u := uses_of(page, key)) and set(u) == hosts and u,
        timeout=10,
        what=f"{key} drawn on {sorted(hosts)}",
    )
    assert all(workload_colour(key) in style for style in shown.values())

    waiting = jobs.workload_of(cluster, namespace, "waiting")
    waiting_key = f"{namespace}/{waiting['metadata']['name']}"
    wait_for(
        lambda: (
            (m := pending_message(cluster, namespace, "waiting"))
            and reason_on_page(page, waiting_key) == m
        ),
        timeout=20,
        what="the pending Job's reason on the page, as its QuotaReserved condition says",
    )
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    print(f"screenshot: {SCREENSHOT}")

    deleted_at = time.monotonic()
    cluster.kubectl("delete", "job", "-n", namespace, "seen", "--wait=false")
    wait_for(
        lambda: jobs.workload_of(cluster, namespace, "seen") is None,
        timeout=60,
        interval=0.05,
        what="the Job's Workload deleted",
    )
    gone_at = time.monotonic()
    page.wait_for_function(
        """key => ![...document.querySelectorAll('.host .use[data-workload]')]
            .some(s => s.dataset.workload === key)""",
        arg=key,
        timeout=FREED_WITHIN * 1000,
    )
    freed_at = time.monotonic()
    print(
        f"hosts freed on the page {freed_at - gone_at:.2f}s after the Workload was gone "
        f"({freed_at - deleted_at:.2f}s after kubectl delete)"
    )
    page.close()
