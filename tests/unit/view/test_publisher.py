"""The publisher: one rebuild per burst of changes, only the parts that changed are sent, a page
catches up from its version, and a slow viewer is dropped instead of holding anyone up."""

from __future__ import annotations

import asyncio
import re

import pytest

from tas.view.publisher import QUEUE_SIZE, Publisher
from tests.unit.view.web_views import (
    admitted,
    cluster,
    host,
    pending,
    two_racks,
    use,
    with_workloads,
)


class Views:
    """A build function returning the views given, counting its calls."""

    def __init__(self, *views):
        self.views = list(views)
        self.calls = 0

    async def __call__(self):
        self.calls += 1
        return self.views[min(self.calls, len(self.views)) - 1]


def ids_in(update_html: str) -> set[str]:
    return set(re.findall(r'id="([^"]+)"[^>]*hx-swap-oob="true"', update_html))


def run(coro):
    return asyncio.run(coro)


def test_a_use_on_one_host_sends_only_its_rack_and_the_heads_above():
    before, after = two_racks(), two_racks(h3=(use("ns/a", 2),))

    async def go():
        publisher = Publisher(Views(before, after))
        await publisher.refresh()
        return await publisher.refresh()

    update = run(go())
    assert ids_in(update.html) == {"dom/tas-flavor/b1/r2", "head/tas-flavor/b1", "free/tas-flavor"}
    assert 'data-workload="ns/a"' in update.html


def test_nothing_changed_sends_nothing():
    async def go():
        publisher = Publisher(Views(two_racks(), two_racks()))
        first = await publisher.refresh()
        return first, await publisher.refresh(), publisher.version

    first, second, version = run(go())
    assert first is not None and second is None and version == 1


def test_a_new_rack_replaces_the_whole_topology():
    bigger = cluster({("b1", "r1"): (host("h1"),), ("b1", "r9"): (host("h9"),)})

    async def go():
        publisher = Publisher(Views(two_racks(), bigger))
        await publisher.refresh()
        return await publisher.refresh()

    update = run(go())
    assert ids_in(update.html) == {"topology"}
    assert 'id="host/tas-flavor/h9"' in update.html


def test_workload_lists_are_sent_when_a_workload_waits_or_goes():
    base = two_racks()
    waiting = with_workloads(base, pending("ns/p", "no room"))

    async def go():
        publisher = Publisher(Views(base, waiting, base))
        await publisher.refresh()
        return [await publisher.refresh(), await publisher.refresh()]

    came, went = run(go())
    assert ids_in(came.html) == {"workloads"} and "no room" in came.html
    assert ids_in(went.html) == {"workloads"} and "no room" not in went.html


def test_a_burst_of_changes_is_one_rebuild_after_the_delay():
    views = Views(two_racks(), two_racks(h1=(use("ns/a", 1),)))

    async def go():
        publisher = Publisher(views, delay=0.05)
        for _ in range(100):
            publisher.changed()
        await asyncio.sleep(0.02)
        early = views.calls
        await asyncio.sleep(0.1)
        return early, views.calls, publisher.version

    assert run(go()) == (0, 1, 1)


def test_a_change_during_a_rebuild_brings_one_more():
    gate = asyncio.Event

    async def go():
        release = gate()
        calls = []

        async def build():
            calls.append(1)
            if len(calls) == 1:
                await release.wait()
            return two_racks(h1=(use("ns/a", len(calls)),))

        publisher = Publisher(build, delay=0.01)
        publisher.changed()
        await asyncio.sleep(0.03)  # the first rebuild is running
        publisher.changed()
        publisher.changed()
        release.set()
        await asyncio.sleep(0.1)
        return len(calls), publisher.version

    assert run(go()) == (2, 2)


def test_viewers_get_updates_and_a_full_queue_drops_the_viewer_only():
    async def go():
        views = [two_racks(h1=(use("ns/a", i),)) for i in range(1, QUEUE_SIZE + 3)]
        publisher = Publisher(Views(*views))
        slow, fast = publisher.subscribe(), publisher.subscribe()
        got = []
        for _ in views:
            await publisher.refresh()
            got.append(fast.queue.get_nowait().version)
        return publisher, slow, fast, got

    publisher, slow, fast, got = run(go())
    assert got == list(range(1, QUEUE_SIZE + 3))
    assert slow.dropped and slow not in publisher.viewers
    assert slow.queue.get_nowait() is None  # its stream is told to end
    assert fast in publisher.viewers and not fast.dropped


@pytest.mark.parametrize(
    ("since", "expected"),
    [
        (1, {"dom/tas-flavor/b1/r1", "head/tas-flavor/b1", "free/tas-flavor"}),
        (2, None),
        (0, {"topology"}),  # drawn empty: the lists were empty then as now
        (99, "all"),  # a page from an earlier run of the process
    ],
    ids=["one-behind", "up-to-date", "first-version", "future"],
)
def test_a_page_catches_up_from_its_version(since, expected):
    async def go():
        publisher = Publisher(Views(two_racks(), two_racks(h2=(use("ns/a", 1),))))
        await publisher.refresh()
        await publisher.refresh()
        return publisher.catch_up(since)

    missed = run(go())
    if expected is None:
        assert missed is None
    elif expected == "all":
        assert ids_in(missed.html) == {"topology", "workloads", "groups", "replacements"}
    else:
        assert ids_in(missed.html) == expected


def test_a_failing_build_is_logged_and_the_next_change_rebuilds(caplog):
    async def go():
        calls = []

        async def build():
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError("boom")
            return with_workloads(two_racks(), admitted("ns/a", ("h1",)))

        publisher = Publisher(build, delay=0.01)
        publisher.changed()
        await asyncio.sleep(0.05)
        publisher.changed()
        await asyncio.sleep(0.05)
        return publisher.version

    assert run(go()) == 1
    assert "view not rebuilt" in caplog.text
