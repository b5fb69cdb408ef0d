"""The reflector's bookkeeping, against a scripted API (the real one: e2e/test_control_loop.py)."""

import asyncio
import random

from tas.kube import KubeError
from tas.kube.reflector import Reflector
from tas.kube.retry import Backoff


class ScriptedApi:
    """Pages to list, then watch streams: each a list of lines or an exception to raise."""

    def __init__(self, pages, watches):
        self.pages = list(pages)
        self.watches = list(watches)
        self.lists = 0

    async def request(self, method, path, params=None, timeout=None, decode=None):
        self.lists += 1
        return self.pages.pop(0)

    async def stream_lines(self, path, params, timeout, idle=None):
        if not self.watches:
            await asyncio.sleep(3600)
        step = self.watches.pop(0)
        if isinstance(step, Exception):
            raise step
        for line in step:
            yield line


def page(*names, rv="10", cont=""):
    return {
        "metadata": {"resourceVersion": rv, "continue": cont},
        "items": [
            {"metadata": {"name": n, "namespace": "ns", "resourceVersion": rv}} for n in names
        ],
    }


def event(kind, name, rv):
    import json

    obj = {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}
    return json.dumps({"type": kind, "object": obj}).encode()


def run(api, until, sleeps=None):
    seen = []

    async def handle(kind, obj):
        seen.append((kind, obj["metadata"]["name"]))

    async def go():
        original = asyncio.sleep

        async def fake_sleep(delay, *a):
            if sleeps is not None and delay < 3600:
                sleeps.append(delay)
                return await original(0)
            return await original(delay, *a)

        asyncio.sleep = fake_sleep
        try:
            r = Reflector(api, "/x", handle, name="x", backoff=Backoff(0.5, 30, random.Random(1)))
            task = asyncio.create_task(r.run())
            for _ in range(2000):
                if until(seen, r):
                    break
                await original(0)
            task.cancel()
            return r
        finally:
            asyncio.sleep = original

    return seen, asyncio.run(go())


def test_pages_are_followed_and_a_relist_reports_what_vanished():
    expired = event("ERROR", "x", "0").replace(b'"metadata"', b'"code": 410, "metadata"')
    api = ScriptedApi(
        [page("a", "b", cont="t1"), page("c", rv="10"), page("a", "c", "d", rv="20")],
        [[event("MODIFIED", "a", "11"), expired]],
    )
    seen, r = run(api, lambda seen, r: r.lists == 2)
    assert seen[:4] == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c"), ("MODIFIED", "a")]
    # After the 410: a and c again, d new, and b, gone meanwhile, handed on as DELETED.
    assert sorted(seen[4:]) == [
        ("ADDED", "d"),
        ("DELETED", "b"),
        ("MODIFIED", "a"),
        ("MODIFIED", "c"),
    ]
    assert r.known == {("ns", "a"), ("ns", "c"), ("ns", "d")} and r.resource_version == "20"


def test_the_watch_resumes_from_the_last_version_and_backs_off_over_an_outage():
    outage = [KubeError(0, "connection refused") for _ in range(8)]
    api = ScriptedApi(
        [page("a")], [[event("ADDED", "b", "12")], *outage, [event("ADDED", "c", "13")]]
    )
    sleeps: list[float] = []
    _, r = run(api, lambda seen, r: ("ADDED", "c") in seen, sleeps)
    assert api.lists == 1  # no relist: the version was still valid
    assert len(sleeps) == 8
    assert sleeps[-1] > 4 * sleeps[0]  # the wait grows while the server stays away
    assert r.failures == 0 and r.resource_version == "13"


def test_a_handler_that_fails_on_one_object_does_not_stop_the_watch():
    api = ScriptedApi([page("a")], [[event("ADDED", "bad", "11"), event("ADDED", "good", "12")]])
    handled = []

    async def handle(kind, obj):
        if obj["metadata"]["name"] == "bad":
            raise ValueError("hostile object")
        handled.append(obj["metadata"]["name"])

    async def go():
        r = Reflector(api, "/x", handle, name="x")
        task = asyncio.create_task(r.run())
        for _ in range(200):
            if "good" in handled:
                break
            await asyncio.sleep(0)
        task.cancel()

    asyncio.run(go())
    assert handled == ["a", "good"]


class PagedApi(ScriptedApi):
    """Pages may be exceptions too, and each request records its continue token."""

    def __init__(self, pages, watches):
        super().__init__(pages, watches)
        self.tokens = []

    async def request(self, method, path, params=None, timeout=None, decode=None):
        self.tokens.append((params or {}).get("continue", ""))
        step = self.pages.pop(0)
        if isinstance(step, Exception):
            raise step
        return step


def test_an_expired_continue_token_restarts_the_list_and_loses_nothing():
    api = PagedApi(
        [
            page("a", "b", cont="t1"),
            KubeError(410, "continue token expired"),
            page("a", cont="t2"),
            page("c", rv="30"),
        ],
        [],
    )
    seen, r = run(api, lambda seen, r: r.lists == 1)
    assert api.tokens == ["", "t1", "", "t2"]
    # b was handed on from the abandoned list and is gone from the new one: it is deleted.
    assert seen == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("MODIFIED", "a"),
        ("ADDED", "c"),
        ("DELETED", "b"),
    ]
    assert r.known == {("ns", "a"), ("ns", "c")} and r.resource_version == "30"


def test_a_failed_page_ends_the_list_without_a_request_left_behind():
    api = PagedApi([page("a", cont="t1"), KubeError(500, "boom"), page("a", rv="40")], [])
    sleeps: list[float] = []
    _, r = run(api, lambda seen, r: r.lists == 1, sleeps)
    assert api.tokens == ["", "t1", ""] and len(sleeps) == 1
    assert r.known == {("ns", "a")} and r.resource_version == "40"


def test_what_a_failed_list_handed_on_is_deleted_by_the_next_list_if_it_vanished():
    api = PagedApi(
        [page("a", "b", cont="t1"), KubeError(500, "boom"), page("a", rv="50")],
        [],
    )
    seen, r = run(api, lambda seen, r: r.lists == 1, [])
    assert ("DELETED", "b") in seen  # b was handed on by the failed list, then vanished
    assert r.known == {("ns", "a")}


def test_a_watch_is_given_up_when_silent_past_the_bookmark_interval_and_within_two_minutes():
    """The API server sends a bookmark about once a minute: the watch asks the client to give
    up a connection silent for longer than that, and no longer than two minutes."""
    idle_asked = []

    class Api(ScriptedApi):
        async def stream_lines(self, path, params, timeout, idle=None):
            idle_asked.append(idle)
            async for line in super().stream_lines(path, params, timeout, idle):
                yield line

    run(Api([page("a")], [[event("ADDED", "b", "11")]]), lambda seen, r: ("ADDED", "b") in seen)
    assert idle_asked and 60 < idle_asked[0] <= 120


def test_a_big_list_and_its_deletions_let_other_tasks_run_while_handed_on():
    """One page of many objects, then a relist that finds them all gone: neither is handed on
    in one stretch (lease renewal and the webhooks share the loop)."""
    names = [f"o{i}" for i in range(30000)]
    api = ScriptedApi([page(*names), page()], [])
    ticks = 0
    seen_at: dict[str, list[int]] = {"ADDED": [], "DELETED": []}

    async def handle(kind, obj):
        seen_at[kind].append(ticks)

    async def go():
        nonlocal ticks
        r = Reflector(api, "/x", handle, name="x")
        listing = asyncio.create_task(r.relist())
        while not listing.done():
            ticks += 1
            await asyncio.sleep(0)
        relisting = asyncio.create_task(r.relist())
        while not relisting.done():
            ticks += 1
            await asyncio.sleep(0)
        return r

    r = asyncio.run(go())
    assert len(seen_at["ADDED"]) == len(seen_at["DELETED"]) == len(names) and not r.known
    for kind, at in seen_at.items():
        assert at[-1] - at[0] >= 2, kind  # the other task ran while they were handed on
