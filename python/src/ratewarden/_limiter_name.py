"""The name an HTTP limit's figures count under (``Limiter(name=...)``: the ``limiter`` label of
``ratewarden_decisions_total``): the scope its keys count under — the route's name (_route_name.py), ranked among the
route's own limits (``/login``, ``/login#2``), or a shared limit's scope, or ``@app`` for the app-wide limit — a
space, then its rates as the core writes them (``Policy.__str__``: ``5/60s``, several joined by ``; ``). So the names
are as many as the configuration's limits, never more (no raw path, no key), and a route's limit has the same name
in every adapter of every language: node/lib's twin runs the same vectors, tests/conformance/limiter_names.json. A
name longer than the core takes (200 bytes) is cut there, at a character's boundary."""

from __future__ import annotations

from typing import Iterable

MAX_NAME_BYTES = 200  # the core's bound on a limiter's name (LimiterOptions::name)


def rates_text(policies: Iterable[object]) -> str:
    """A limiter's rates as the core writes them: ``10/1s; 1000/3600s``."""
    return "; ".join(str(p) for p in policies)


def limiter_name(scope: str, rates: str) -> str:
    name = f"{scope} {rates}"
    raw = name.encode("utf-8")
    if len(raw) <= MAX_NAME_BYTES:
        return name
    return raw[:MAX_NAME_BYTES].decode("utf-8", "ignore")  # a character cut in two is left out
