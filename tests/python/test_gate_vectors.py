"""The HTTP gate's decisions (tests/conformance/gate.json) through Python's Gate, driven as an adapter drives it:
``skip``, then ``check``, then the 400 of a key error, the refusal, or the app's own status and ``settle`` — with
the fields the response would carry. The memory store runs on a ``TestClock``; "unreachable" is a Redis URL whose
port nobody listens on. tests/node/gate_vectors.test.js runs the same file through Node's HttpLimiter."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

import ratewarden
from ratewarden import keys
from ratewarden._http import Gate, LimitSpec, Options, Route, address_reader, key_rejection
from ratewarden._route_name import route_name
from redis_server import free_port

CONFORMANCE = Path(__file__).parents[1] / "conformance"
VECTORS: Dict[str, Any] = json.loads((CONFORMANCE / "gate.json").read_text())
REFUSALS: Dict[str, Any] = json.loads((CONFORMANCE / "refusals.json").read_text())
UNREACHABLE = f"redis://127.0.0.1:{free_port()}?timeout=200ms&connect_timeout=200ms"
RATE_LIMIT_ITEM = re.compile(r'"[^"]*";r=(\d+);t=(\d+)')

Request = Dict[str, Any]  # {"client": address, "headers": {lower-case name: value}}


class _Access:
    """How the gate reads the runner's requests."""

    @staticmethod
    def address_key(options: Options) -> Any:
        return address_reader(options, lambda req: req["client"], lambda req: [])

    @staticmethod
    def header(req: Request, name: str) -> Optional[str]:
        return req["headers"].get(name.lower())

    @staticmethod
    def user(req: Request) -> None:
        return None

    @staticmethod
    def form(req: Request, name: str) -> None:
        return None

    @staticmethod
    def call(func: Any) -> Any:
        return func


def _key(spec: str) -> Any:
    if spec == "ip":
        return None  # the default key: the client address
    assert spec.startswith("header:"), spec
    return keys.header(spec[len("header:"):])


def _gate(case: Dict[str, Any], clock: ratewarden.TestClock) -> Tuple[Gate, Route, Dict[str, ratewarden.KeyList]]:
    store: Any = (UNREACHABLE if case.get("store", "memory") == "unreachable"
                  else ratewarden.Store("memory://", test_clock=clock))
    options = case.get("options", {})
    lists = {name: ratewarden.KeyList(name, store) for name in ("allow_list", "deny_list") if name in options}
    for name, keyed in lists.items():
        for key in options[name]:
            keyed.add(key)
    skip_header = options.get("skip_header")
    block_ms = options.get("block_duration_ms")
    gate = Gate(Options.read({
        "store": store,
        **lists,
        "block_duration": block_ms / 1000 if block_ms is not None else None,
        "skip": (lambda req: skip_header in req["headers"]) if skip_header is not None else None,
    }, str), _Access)
    specs = [LimitSpec.make(
        limit["policy"], key=_key(limit.get("key", "ip")), algorithm=limit.get("algorithm", "fixed_window"),
        shadow=limit.get("shadow", False), on_store_error=limit.get("on_store_error", "allow"),
        count_when=limit.get("count_when"),
    ) for limit in case["limits"]]
    name = route_name(case["route"])
    return gate, gate.route(specs, name, name), lists


def _answer(gate: Gate, route: Route, req: Request, response: int) -> Tuple[int, Dict[str, str], Any]:
    """The status, fields and (type, body) of a fixed answer (None for the app's) of one request, as an adapter
    makes them (flask.py: _check, _refuse, _add_headers)."""
    if gate.skip is not None and gate.skip(req):
        return response, {}, None
    checked = gate.check(route, req, "GET")
    assert checked is not None
    if checked.key_error is not None:
        status, body, content_type = key_rejection(checked.key_error)
        return status, dict(gate.fields(checked)), (content_type, body.decode())
    if checked.refused >= 0:
        refusal = gate.refusal(checked)
        if checked.charged:
            gate.settle(checked, refusal.status)
        return refusal.status, dict(refusal.headers), (refusal.content_type, refusal.body.decode())
    if checked.charged:
        gate.settle(checked, response)
    return response, dict(gate.fields(checked)), None


def _rate_limit_items(fields: Dict[str, str]) -> List[List[int]]:
    return [[int(r), int(t)] for r, t in RATE_LIMIT_ITEM.findall(fields.get("RateLimit", ""))]


@pytest.mark.parametrize("case", VECTORS["cases"], ids=[c["name"][:60] for c in VECTORS["cases"]])
def test_gate_vectors(case: Dict[str, Any]) -> None:
    clock = ratewarden.TestClock(VECTORS["base_us"])
    gate, route, lists = _gate(case, clock)
    for n, step in enumerate(case["steps"]):
        clock.now_us = VECTORS["base_us"] + step["t"]
        op = step.get("op", "request")
        if op != "request":
            getattr(lists[step["list"]], op)(step["key"])
            continue
        req = {"client": step["client"], "headers": step.get("headers", {})}
        status, fields, answer = _answer(gate, route, req, step.get("response", 200))
        expect = {"skipped": None, **step["expect"]}
        got = {
            "status": status,
            "ratelimit": _rate_limit_items(fields),
            "retry_after": int(fields["Retry-After"]) if "Retry-After" in fields else None,
            "skipped": fields.get("RateLimit-Skipped"),
        }
        if "body" in expect:
            refusal = REFUSALS[expect["body"]]
            expect["body"] = (refusal["content_type"], refusal["body"])
            got["body"] = answer
        if "shadow_refused" in expect:
            got["shadow_refused"] = gate.stats()["shadow_refused"]
        assert got == expect, f"step {n}: {step}"
