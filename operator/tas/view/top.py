"""`tas top`: the topology view in the terminal, from `tas view`'s /model.json or from a
`tas simulate` trace at a chosen time.

Live, it reads GET <url>/model.json every --interval seconds and redraws in place (rich.live);
a read that fails after the first frame is shown above the last good frame and retried, as a
server restart should not end the session. --once, a trace, or a stdout that is not a terminal
print one frame and exit. Any failure before the first frame is one line on stderr and exit 1.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import IO

from rich.console import Console, Group, RenderableType
from rich.text import Text

from tas.config import DEFAULT_VIEW_ADDRESS
from tas.view import codec, text
from tas.view.amounts import printable
from tas.view.model import ClusterView

DEFAULT_URL = f"http://{DEFAULT_VIEW_ADDRESS}"  # the operator's own view, on this host
DEFAULT_INTERVAL = 2.0
TIMEOUT_SECONDS = 10.0
MAX_BYTES = 256 << 20  # /model.json of a 5,000-node cluster is a few MB
MAX_MESSAGE = 300  # characters of an error's reason
PIPE_WIDTH = 160  # columns of a frame printed into a pipe or a file
INTERRUPTED = 130  # Ctrl-C before the first frame, as a shell reports SIGINT

Fetch = Callable[[str], bytes]


class TopError(Exception):
    """What went wrong, as the one line `tas top` prints."""


def main(
    stdout: IO[str],
    stderr: IO[str],
    *,
    url: str | None = None,
    interval: float | None = None,
    once: bool = False,
    trace: str | None = None,
    at: float | None = None,
    fetch: Fetch | None = None,
) -> int:
    """Exit 0 after a frame (or on Ctrl-C in live mode), 1 with one line on stderr when the
    first frame cannot be had, 2 for flags that do not go together."""
    url = url or DEFAULT_URL
    interval = DEFAULT_INTERVAL if interval is None else interval
    if (trace is None) != (at is None):
        stderr.write("tas top: --trace and --at go together\n")
        return 2
    if not interval > 0:  # also NaN
        stderr.write(f"tas top: --interval: {interval} is not a positive number of seconds\n")
        return 2
    read = fetch or http_get
    try:
        if trace is not None and at is not None:
            view = from_trace(trace, at)
        else:
            view = from_url(url, read)
    except TopError as error:
        stderr.write(f"tas top: {error}\n")
        return 1
    except KeyboardInterrupt:  # while waiting for the first frame
        return INTERRUPTED
    console = Console(file=stdout)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = PIPE_WIDTH  # a file or a pipe: as wide as the frame needs
    if once or trace is not None or not console.is_terminal:
        print_frame(console, view)
        return 0
    return follow(console, view, lambda: from_url(url, read), interval)


def print_frame(console: Console, view: ClusterView) -> None:
    console.print(text.render(view), crop=False)


def follow(
    console: Console, view: ClusterView, refresh: Callable[[], ClusterView], interval: float
) -> int:
    """Redraw every `interval` seconds until Ctrl-C."""
    from rich.live import Live

    try:
        with Live(text.render(view), console=console, auto_refresh=False) as live:
            while True:
                time.sleep(interval)
                problem = None
                try:
                    view = refresh()
                except TopError as error:
                    problem = error
                live.update(frame(view, problem), refresh=True)
    except KeyboardInterrupt:
        return 0


def frame(view: ClusterView, problem: Exception | None) -> RenderableType:
    if problem is None:
        return text.render(view)
    warning = Text(f"{problem}; showing the last frame, retrying", style="bold red")
    return Group(warning, text.render(view))


# ---- where a view comes from -------------------------------------------------------------------


def from_url(url: str, read: Fetch) -> ClusterView:
    address = url.rstrip("/") + "/model.json"
    body = read(address)
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise TopError(f"{address}: not JSON: {_short(error)}") from None
    return decoded(data, address)


def decoded(data: object, where: str) -> ClusterView:
    if not isinstance(data, dict):
        raise TopError(f"{where}: expected a JSON object")
    try:
        return codec.from_data(data)
    except (ValueError, RecursionError) as error:
        raise TopError(f"{where}: {_short(error)}") from None


def http_get(address: str) -> bytes:
    """The body of a GET, at most MAX_BYTES; a TopError says why not."""
    if not address.startswith(("http://", "https://")):
        raise TopError(f"--url: {address!r} is not an http:// or https:// address")
    try:
        with urllib.request.urlopen(address, timeout=TIMEOUT_SECONDS) as response:
            body = response.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as error:
        raise TopError(f"{address}: HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise TopError(f"cannot read {address}: {_short(reason)}") from None
    if len(body) > MAX_BYTES:
        raise TopError(f"{address}: more than {MAX_BYTES} bytes")
    return body


def from_trace(path: str, at: float) -> ClusterView:
    """The trace's state at `at` seconds of its simulated clock."""
    from tas.offline import scenario
    from tas.offline.fields import ScenarioError
    from tas.offline.simulate import trace as tracefile
    from tas.view import trace as viewtrace

    try:
        return viewtrace.view_at(tracefile.read(path), at)
    except ScenarioError as error:
        raise TopError(f"--trace: {scenario.error_line(error)}") from None
    except ValueError as error:  # `at` outside the trace's clock
        raise TopError(f"--trace {path}: {_short(error)}") from None


def _short(reason: object) -> str:
    line = printable(" ".join(str(reason).split()))
    return line if len(line) <= MAX_MESSAGE else line[:MAX_MESSAGE] + "..."
