"""A Runtime that reaches no API server, for tests of its own wiring."""

from __future__ import annotations

from tas.config import Settings
from tas.kube import Connection, Kube
from tas.runtime.runtime import Runtime


def offline_runtime() -> Runtime:
    kube = Kube(Connection(server="http://127.0.0.1:9", ssl=False))
    return Runtime(Settings(leader_elect=False), kube=kube)
