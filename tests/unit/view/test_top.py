"""`tas top` (view/top.py): one frame from a server's /model.json, the live loop that redraws
and survives a server going away, and one line on stderr for what cannot be drawn."""

from __future__ import annotations

import http.server
import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from tas import cli
from tas.view import codec, top
from tas.view import model as m

RACK = "cloud.provider.com/topology-rack"


def sample() -> m.ClusterView:
    alloc = {"cpu": 8000, "pods": 110_000}
    use = m.Use("team/train", {"cpu": 3000}, 3)
    hosts = (
        m.HostView("x1", alloc, (use,), {"cpu": 5000, "pods": 107_000}),
        m.HostView("x2", alloc, (), dict(alloc), (m.CORDONED,)),
    )
    rack = m.DomainView(
        RACK, "r1", {"cpu": 13000, "pods": 217_000}, {"cpu": 16000, "pods": 220_000}, hosts=hosts
    )
    flavor = m.FlavorView("default", "default", (RACK, "kubernetes.io/hostname"), (rack,))
    workloads = (
        m.WorkloadView("team/train", "lq", "cq", 3, True, hosts=("x1",)),
        m.WorkloadView("team/big", "lq", "cq", 40, False, reason="does not fit", needs="40 pods"),
    )
    return m.ClusterView((flavor,), workloads, at=1_700_000_000.0)


class Server(http.server.ThreadingHTTPServer):
    body: bytes = b""
    status: int = 200


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        server: Server = self.server  # type: ignore[assignment]
        if self.path != "/model.json":
            self.send_error(404)
            return
        self.send_response(server.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(server.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Server]:
    httpd = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def url(server: Server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def run(**flags) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = top.main(out, err, **flags)
    return code, out.getvalue(), err.getvalue()


def test_once_draws_what_the_server_serves(server: Server) -> None:
    server.body = json.dumps(codec.to_data(sample())).encode()
    code, out, err = run(url=url(server) + "/", once=True)
    assert (code, err) == (0, "")
    assert "1 admitted, 1 pending" in out
    assert "rack r1" in out and " 3/16" in out  # cpu: x1's use of the rack's allocatable
    assert "team/big" in out and "does not fit" in out


def test_a_pipe_gets_one_frame_without_once(server: Server) -> None:
    server.body = json.dumps(codec.to_data(sample())).encode()
    code, out, _ = run(url=url(server))  # StringIO is no terminal: no live loop
    assert code == 0 and out.count("tas top ·") == 1


@pytest.mark.parametrize(
    ("status", "body", "says"),
    [
        (200, b"{not json", "not JSON"),
        (200, b"\xff\xfe", "not JSON"),
        (200, b"[]", "expected a JSON object"),
        (200, b'{"flavors": [], "workloads": [{"key": 1}]}', "view.workloads[0].key"),
        (200, b"[" * 100_000 + b"]" * 100_000, "not JSON"),
        (500, b"", "HTTP 500"),
    ],
    ids=["truncated", "not-utf8", "a-list", "a-field", "deep", "server-error"],
)
def test_what_cannot_be_drawn_is_one_line(
    server: Server, status: int, body: bytes, says: str
) -> None:
    server.status, server.body = status, body
    code, out, err = run(url=url(server), once=True)
    assert code == 1 and out == ""
    assert err.startswith("tas top: ") and err.count("\n") == 1 and says in err


def test_nobody_listening_is_one_line() -> None:
    httpd = Server(("127.0.0.1", 0), Handler)
    port = httpd.server_address[1]
    httpd.server_close()  # the port is free again, nobody listens
    code, out, err = run(url=f"http://127.0.0.1:{port}", once=True)
    assert code == 1 and out == ""
    assert err.startswith(f"tas top: cannot read http://127.0.0.1:{port}/model.json: ")


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        ({"trace": "t.yaml"}, "--trace and --at go together"),
        ({"at": 3.0}, "--trace and --at go together"),
        ({"interval": 0.0}, "--interval"),
        ({"interval": float("nan")}, "--interval"),
    ],
    ids=["trace-alone", "at-alone", "zero-interval", "nan-interval"],
)
def test_flags_that_do_not_go_together(flags: dict, says: str) -> None:
    code, out, err = run(**flags)
    assert code == 2 and out == "" and says in err and err.count("\n") == 1


def test_a_url_that_is_not_http_is_refused_unread() -> None:
    code, _, err = run(url="file:///etc/passwd", once=True)
    assert code == 1 and "--url" in err


def test_live_redraws_and_keeps_the_last_frame_while_the_server_is_away() -> None:
    """Three refreshes: a new view, a failure (shown above the last good frame), Ctrl-C."""
    first = sample()
    second = m.ClusterView(first.flavors, first.workloads[:1], at=first.at + 2)
    answers: list = [second, top.TopError("cannot read http://x/model.json: refused")]

    def refresh() -> m.ClusterView:
        if not answers:
            raise KeyboardInterrupt
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    assert top.follow(console, first, refresh, interval=0.001) == 0
    text = out.getvalue()
    assert "1 admitted, 1 pending" in text  # the first frame
    assert "1 admitted, 0 pending" in text  # the refresh
    assert "cannot read http://x/model.json: refused; showing the last frame, retrying" in text


def test_the_command_line(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    server.body = json.dumps(codec.to_data(sample())).encode()
    assert cli.main(["top", "--url", url(server), "--once"]) == 0
    assert "team/train" in capsys.readouterr().out
    assert cli.main(["top", "--trace", "t.yaml"]) == 2


SMALL_TRACE = Path(__file__).parents[1] / "offline" / "testdata" / "small-trace.json"


def test_a_trace_at_a_time() -> None:
    """At 2 s of the small trace: `gap` (1 pod of 1 cpu) and `spread` (4 of 2 cpu) run on the
    block's 4 hosts of 4 cpu, `pair` has just failed to fit; nothing has left yet."""
    code, out, err = run(trace=str(SMALL_TRACE), at=2.0)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("tas top · t = 2 s · 2 admitted, 1 pending")
    block = next(line for line in lines if line.startswith("block b0"))
    assert block.split()[2] == "4" and block.split()[4] == "9/16"  # hosts; cpu 1 + 4 x 2
    rows = {line.split()[0]: line.split()[1:] for line in lines if line.startswith("scenario/")}
    assert rows["scenario/gap"][0] == "1" and rows["scenario/spread"][0] == "4"
    assert rows["scenario/pair"][:2] == ["2", "2"]  # 2 pods, "2 pods of cpu=3"
    assert "allows to fit only 1 out of 2 pod(s)" in out


@pytest.mark.parametrize(
    ("at", "says"),
    [(99.0, "beyond the trace's end"), (-1.0, "at:"), (float("nan"), "at:")],
    ids=["past-the-end", "negative", "nan"],
)
def test_a_time_outside_the_trace_is_one_line(at: float, says: str) -> None:
    code, out, err = run(trace=str(SMALL_TRACE), at=at)
    assert code == 1 and out == "" and err.count("\n") == 1 and says in err


def test_a_trace_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("topology: {levels: []}\nnodes: []\nworkloads: []\n")
    for path in (tmp_path / "bad.yaml", tmp_path / "missing.yaml"):
        code, out, err = run(trace=str(path), at=0.0)
        assert code == 1 and out == "" and err.startswith("tas top: --trace: ")
        assert err.count("\n") == 1
