"""The view's web server: the page, the model as JSON, the gang query, and the event stream a
page follows, on a real socket of the test's loop."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from tas.view import codec
from tas.view.address import parse_address
from tas.view.publisher import Publisher
from tas.view.server import ViewServer, gang_query
from tests.unit.view.web_views import pending, two_racks, use, with_workloads


class Views:
    def __init__(self, *views):
        self.views = list(views)

    async def __call__(self):
        return self.views.pop(0) if len(self.views) > 1 else self.views[0]


def serve(test, *views, gangs=None):
    """Run `test(server, session, base_url)` against a server on a free port."""
    asked = []

    def largest(per_pod, level, mode):
        asked.append((dict(per_pod), level, mode))
        return gangs or {}

    async def go():
        publisher = Publisher(Views(*views), delay=0.01)
        await publisher.refresh()
        server = ViewServer(publisher, largest, "127.0.0.1:0")
        assert await server.start()
        try:
            async with aiohttp.ClientSession() as session:
                return await test(server, session, f"http://127.0.0.1:{server.bound_port()}")
        finally:
            await server.stop()

    return asyncio.run(go()), asked


def test_page_and_its_scripts_are_served():
    async def test(server, session, base):
        async with session.get(base + "/") as r:
            page = await r.text()
        scripts = {}
        for path in ("htmx/htmx.min.js", "htmx-ext-sse/sse.min.js"):
            async with session.get(f"{base}/static/{path}") as r:
                scripts[path] = (r.status, len(await r.read()))
        return page, scripts

    (page, scripts), _ = serve(test, two_racks(h1=(use("ns/a", 2),)))
    assert 'id="host/tas-flavor/h1"' in page and 'data-workload="ns/a"' in page
    assert all(status == 200 and size > 1000 for status, size in scripts.values())


def test_model_json_is_the_codec_of_the_view():
    view = with_workloads(two_racks(h1=(use("ns/a", 2),)), pending("ns/p", "no room"))

    async def test(server, session, base):
        async with session.get(base + "/model.json") as r:
            return r.status, await r.json()

    (status, data), _ = serve(test, view)
    assert status == 200 and codec.from_data(data) == view


def test_gang_query_answers_json_and_the_form_gets_a_table():
    async def test(server, session, base):
        url = base + "/gang?level=rack&mode=preferred&cpu=500m&memory=1Gi"
        async with session.get(url) as r:
            as_json = await r.json()
        async with session.get(url, headers={"HX-Request": "true"}) as r:
            as_html = await r.text()
        return as_json, as_html

    (as_json, as_html), asked = serve(test, two_racks(), gangs={"tas-flavor": 12})
    assert as_json == {"level": "rack", "mode": "preferred", "largest": {"tas-flavor": 12}}
    assert asked[0] == ({"cpu": 500, "memory": (1 << 30) * 1000}, "rack", "preferred")
    assert '<td class="count">12</td>' in as_html


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ({"cpu": "1"}, "level"),
        ({"level": "rack", "mode": "sometimes", "cpu": "1"}, "mode"),
        ({"level": "rack", "cpu": "lots"}, "cpu"),
        ({"level": "rack", "memory": "-1Gi"}, "memory"),
        ({"level": "rack"}, "a pod must request"),
    ],
    ids=["no-level", "bad-mode", "bad-cpu", "negative-memory", "no-request"],
)
def test_bad_gang_queries_name_the_parameter(query, names):
    with pytest.raises(ValueError, match=names):
        gang_query(query)


def test_a_bad_gang_query_is_a_400_with_the_reason():
    async def test(server, session, base):
        async with session.get(base + "/gang?level=rack&cpu=x") as r:
            return r.status, await r.json()

    (status, body), asked = serve(test, two_racks())
    assert status == 400 and "cpu" in body["error"] and not asked


def test_the_event_stream_sends_what_changed_after_the_page_was_drawn():
    before, after = two_racks(), two_racks(h4=(use("ns/b", 4),))

    async def test(server, session, base):
        async with session.get(f"{base}/events?since={server.publisher.version}") as r:
            assert r.headers["Content-Type"] == "text/event-stream"
            await asyncio.sleep(0.05)
            assert len(server.publisher.viewers) == 1
            server.publisher.changed()
            lines = []
            while not lines or lines[-1] != "":
                lines.append((await r.content.readline()).decode().rstrip("\n"))
        return lines

    lines, _ = serve(test, before, after)
    assert lines[0] == "id: 2" and lines[1] == "event: update"
    data = "\n".join(line.removeprefix("data: ") for line in lines[2:-1])
    assert 'id="dom/tas-flavor/b1/r2" data-level="rack"' in data
    assert 'data-workload="ns/b"' in data


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:8090", ("127.0.0.1", 8090)),
        ("[::1]:9", ("::1", 9)),
        (":8090", ("127.0.0.1", 8090)),
    ],
)
def test_addresses(text, expected):
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["8090", "host:", "host:port", "h:70000"])
def test_bad_addresses_are_refused(text):
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_address(text)


def test_a_port_in_use_is_logged_and_start_says_no(caplog):
    async def go():
        blocker = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = blocker.sockets[0].getsockname()[1]
        server = ViewServer(Publisher(Views(two_racks())), lambda *a: {}, f"127.0.0.1:{port}")
        try:
            return await server.start()
        finally:
            await server.stop()
            blocker.close()

    assert asyncio.run(go()) is False
    assert "topology view not served" in caplog.text
