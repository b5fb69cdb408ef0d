"""The reflector's bookkeeping, against a scripted API (the real one: e2e/test_control_loop.py)."""

import asyncio
import random

from tas.cache.reflector import Reflector
from tas.kube import KubeError
from tas.retry import Backoff


class ScriptedApi:
    """Pages to list, then watch streams: each a list of lines or an exception to raise."""

    def __init__(self, pages, watches):
        self.pages = list(pages)
        self.watches = list(watches)
        self.lists = 0

    async def request(self, method, path, params=None, timeout=None):
        self.lists += 1
        return self.pages.pop(0)

    async def stream_lines(self, path, params, timeout):
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
