"""The view's listen address, checked when the operator starts: apart from the server, whose
imports (aiohttp's web, jinja2) are not needed until after the first admissions."""

from __future__ import annotations


def parse_address(text: str) -> tuple[str, int]:
    """ "HOST:PORT" (IPv6 as "[::1]:8090"); a ValueError says what is wrong."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"{text!r} is not HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)
