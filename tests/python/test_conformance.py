"""The shared conformance vectors (tests/conformance/vectors.json) through the Python API, on every store.

The stores run on a ``ratewarden.TestClock``: its time is an integer the test sets, read by the core without the GIL
(the Redis store passes it to the scripts instead of the server's TIME).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, Dict

import pytest

import ratewarden
from ratewarden import _native

VECTORS: Dict[str, Any] = json.loads((Path(__file__).parents[1] / "conformance" / "vectors.json").read_text())
CASES = VECTORS["cases"]
_prefixes = itertools.count()


def test_vectors_cover_every_algorithm() -> None:
    assert {c["algorithm"] for c in CASES} == set(_native.algorithms())


@pytest.mark.parametrize("hit_with", ["hit", "allow"])
@pytest.mark.parametrize("store_kind", ["memory", "redis", "postgres"])
@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c['name'][:60]}" for i, c in enumerate(CASES)])
def test_conformance(case: Dict[str, Any], store_kind: str, hit_with: str, request: pytest.FixtureRequest) -> None:
    """Every step through hit (or allow, which answers only `allowed`) and peek."""
    clock = ratewarden.TestClock(VECTORS["base_us"])
    url = "memory://"
    if store_kind == "redis":
        url = request.getfixturevalue("redis").url
    elif store_kind == "postgres":
        url = request.getfixturevalue("postgres").url + "?timeout=5s"
    store = ratewarden.Store(url, test_clock=clock)
    limiter = ratewarden.Limiter(
        case["policy"],
        store,
        algorithm=case["algorithm"],
        burst=case["burst"],
        buckets=case["buckets"],
        prefix=f"conformance-py{next(_prefixes)}",  # a fresh, empty state for every case
    )
    reservations: Dict[int, ratewarden.Decision] = {}
    for n, step in enumerate(case["steps"]):
        clock.now_us = VECTORS["base_us"] + step["t"]
        if step["op"] == "reset":
            limiter.reset(step["key"])
            continue
        if step["op"] == "hit" and hit_with == "allow":
            assert limiter.allow(step["key"], step["cost"]) is step["expect"]["allowed"], f"step {n}: {step}"
            continue
        if step["op"] == "cancel":
            given = limiter.cancel(step["key"], reservations[step["reservation"]], step["cost"])
            assert given is step["expect"]["given"], f"step {n}: {step}"
            continue
        if "error" in step["expect"]:
            with pytest.raises(ratewarden.InvalidArgumentError):
                limiter.reserve(step["key"], step["cost"], step["max_wait"] / 1e6)
            continue
        if step["op"] == "reserve":
            d = reservations[n] = limiter.reserve(step["key"], step["cost"], max_wait=step["max_wait"] / 1e6)
            assert d.wait_us == step["expect"]["wait"] and d.wait == d.wait_us / 1e6, f"step {n}: {step}"
            step = {**step, "expect": {k: v for k, v in step["expect"].items() if k != "wait"}}
        else:
            call = {"hit": limiter.hit, "peek": limiter.peek, "refund": limiter.refund}[step["op"]]
            d = call(step["key"], step["cost"])
        got = {
            "allowed": d.allowed,
            "limit": d.limit,
            "remaining": d.remaining,
            "reset_after": d.reset_after_us,
            "retry_after": d.retry_after_us,
            "used": d.used,
            "policy_index": d.policy_index,
        }
        assert got == {"policy_index": 0, **step["expect"]}, f"step {n}: {step}"
        assert d.retry_after == step["expect"]["retry_after"] / 1e6  # float seconds, from the exact µs
