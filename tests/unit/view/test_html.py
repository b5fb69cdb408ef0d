"""The page as HTML: each host's bar shows its uses, marks and free room; parts keep their ids."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from tas.view import html
from tas.view import model as m
from tests.unit.view.web_views import (
    CPU,
    HOST,
    admitted,
    cluster,
    host,
    pending,
    two_racks,
    use,
    with_workloads,
)


class Elements(HTMLParser):
    """Every element with its attributes, and the text of each id'd element's subtree."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def by_id(self, ident: str) -> dict[str, str]:
        found = [a for _, a in self.elements if a.get("id") == ident]
        assert len(found) == 1, f"{ident}: {len(found)} elements"
        return found[0]

    def with_attr(self, name: str) -> list[dict[str, str]]:
        return [a for _, a in self.elements if name in a]


def width(style: str) -> float:
    return float(re.search(r"width:([\d.]+)%", style).group(1))


def test_host_bar_has_one_segment_per_use_in_its_share_with_the_workload_colour():
    view = two_racks(h1=(use("ns/a", 2), use("ns/b", 4), use(None, 1)))
    page = Elements(html.Renderer().page(view, 0))
    segments = [a for a in page.with_attr("data-workload")]
    on_h1 = {a["data-workload"]: a for a in segments if "ns/" in a["data-workload"]}
    assert set(on_h1) == {"ns/a", "ns/b"}
    assert width(on_h1["ns/a"]["style"]) == 25.0  # 2 of 8 cpus
    assert width(on_h1["ns/b"]["style"]) == 50.0
    assert html.workload_colour("ns/a") in on_h1["ns/a"]["style"]
    assert "ns/a: 1 pods, cpu 2" in on_h1["ns/a"]["title"]
    others = [a for _, a in page.elements if "other" in a.get("class", "").split()]
    assert [width(a["style"]) for a in others] == [12.5]
    page.by_id("host/tas-flavor/h1")  # a stable id per host


def test_a_workload_keeps_its_colour_and_two_workloads_differ():
    colours = {html.workload_colour(f"ns/job-{i}") for i in range(50)}
    assert html.workload_colour("ns/job-1") == html.workload_colour("ns/job-1")
    assert len(colours) > 40  # hues spread (360 of them)


@pytest.mark.parametrize("mark", [m.CORDONED, m.NOT_READY, m.TAINTED])
def test_marks_show_on_the_host(mark):
    view = cluster({("b1", "r1"): (host("h1", marks=(mark,)), host("h2"))})
    page = Elements(html.Renderer().page(view, 0))
    assert page.by_id("host/tas-flavor/h1")["data-marks"] == mark
    assert f"mark-{mark}" in page.by_id("host/tas-flavor/h1")["class"]
    assert page.by_id("host/tas-flavor/h2")["data-marks"] == ""


def test_pending_reason_and_needs_are_shown_verbatim_and_escaped():
    reason = "couldn't assign flavors to pod set main: insufficient <cpu> & more"
    view = with_workloads(two_racks(), pending("ns/p", reason), admitted("ns/a", ("h1",)))
    text = html.Renderer().page(view, 0)
    page = Elements(text)
    row = page.by_id("wl/ns/p")
    assert row["data-admitted"] == "false"
    assert "insufficient &lt;cpu&gt; &amp; more" in text
    assert page.by_id("wl/ns/a")["data-admitted"] == "true"


def test_free_capacity_per_level_counts_domains_and_the_emptiest():
    view = two_racks(h1=(use("ns/a", 6),), h3=(use("ns/b", 1),))
    (flavor,) = view.flavors
    free = {lf.level: lf for lf in html.free_by_level(flavor)}
    assert free["rack"].domains == 2
    assert free["rack"].total == {"cpu": (32 - 7) * CPU}
    assert free["rack"].most == {"cpu": 15 * CPU}  # r2: 16 - 1
    assert free[HOST].domains == 4
    assert free[HOST].most == {"cpu": 8 * CPU}


def test_every_part_has_its_id_on_the_page_and_renders_alone_with_the_same_id():
    view = with_workloads(two_racks(h2=(use("ns/a", 1),)), pending("ns/p", "waiting"))
    renderer = html.Renderer()
    page = Elements(renderer.page(view, 0))
    for pid, part in html.parts(view).items():
        page.by_id(pid)
        if pid != html.TOPOLOGY_ID:
            alone = Elements(str(renderer.render_part(part)))
            assert alone.elements[0][1]["id"] == pid
            assert alone.elements[0][1]["hx-swap-oob"] == "true"


def test_the_page_connects_its_event_stream_from_its_version():
    page = Elements(html.Renderer().page(two_racks(), 7))
    (stream,) = page.with_attr("sse-connect")
    assert stream["sse-connect"] == "events?since=7"
    assert stream["sse-swap"] == "update"


@pytest.mark.parametrize(
    ("resource", "milli", "text"),
    [
        ("cpu", 500, "0.5"),
        ("cpu", 64000, "64"),
        ("memory", 16 * (1 << 30) * 1000, "16Gi"),
        ("nvidia.com/gpu", 8000, "8"),
    ],
    ids=["half-core", "cores", "memory", "gpus"],
)
def test_quantities_read_as_people_write_them(resource, milli, text):
    assert html.quantity(resource, milli) == text


def test_gpu_flavors_draw_their_bars_in_gpus():
    gpu_host = m.HostView("g1", {"cpu": 8000, "nvidia.com/gpu": 8000}, (), {"cpu": 8000})
    flavor = m.FlavorView(
        "gpu", "t", (HOST,), (m.DomainView(HOST, "x", {}, {}, hosts=(gpu_host,)),)
    )
    assert html.bar_resource(flavor) == "nvidia.com/gpu"
