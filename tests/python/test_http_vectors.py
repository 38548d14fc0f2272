"""The shared HTTP vectors through the Python helpers: tests/conformance/headers.json against ratewarden._headers
(the fields Flask sends), tests/conformance/client_keys.json against ratewarden._client_key (Flask's default key),
route_names.json against ratewarden._route_name and refusals.json against the HTTP layer's fixed bodies.
tests/node/http_vectors.test.js runs the same files against the Node modules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

from ratewarden import Decision
from ratewarden._client_key import client_key
from ratewarden._headers import STYLES, Quota, Report, rate_limit_fields, sf_string
from ratewarden._http import FORBIDDEN, key_rejection
from ratewarden._route_name import route_name

CONFORMANCE = Path(__file__).parents[1] / "conformance"
HEADERS: Dict[str, Any] = json.loads((CONFORMANCE / "headers.json").read_text())
CLIENT_KEYS: Dict[str, Any] = json.loads((CONFORMANCE / "client_keys.json").read_text())


def report(limit: Dict[str, Any]) -> Report:
    quotas = [Quota(p["name"], p["limit"], p["period_us"]) for p in limit["policies"]]
    decision: Optional[Decision] = Decision(**limit["decision"]) if limit["decision"] is not None else None
    return Report(quotas, decision)


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("style", [*STYLES, None])
@pytest.mark.parametrize("case", HEADERS["cases"], ids=[c["name"][:60] for c in HEADERS["cases"]])
def test_header_vectors(case: Dict[str, Any], style: Optional[str], legacy: bool) -> None:
    expect = case["expect"]
    wanted = {**expect[style or "none"], **(expect["legacy"] if legacy else {})}
    fields = rate_limit_fields([report(x) for x in case["limits"]], style, legacy, HEADERS["now_us"])
    assert len({name for name, _ in fields}) == len(fields)  # each field once
    assert dict(fields) == wanted


@pytest.mark.parametrize("text, expected", HEADERS["names"])
def test_policy_names(text: str, expected: Optional[str]) -> None:
    if expected is None:
        with pytest.raises(ValueError, match="printable ASCII"):
            sf_string(text)
    else:
        assert sf_string(text) == expected


@pytest.mark.parametrize(
    "case", CLIENT_KEYS["cases"], ids=[f"{c['address']}/{c['ipv6_subnet']}" for c in CLIENT_KEYS["cases"]]
)
def test_client_key_vectors(case: Dict[str, Any]) -> None:
    assert client_key(case["address"], case["ipv6_subnet"]) == case["key"]


def test_client_key_default_is_56() -> None:
    assert client_key("2001:db8:abcd:12ff::1") == "2001:db8:abcd:1200::/56"


@pytest.mark.parametrize("case", json.loads((CONFORMANCE / "route_names.json").read_text())["cases"],
                         ids=lambda c: f"{c['framework']}:{c['template']}")
def test_route_names(case: Dict[str, Any]) -> None:
    assert route_name(case["template"]) == case["name"]


def test_refusal_bodies() -> None:
    refusals = json.loads((CONFORMANCE / "refusals.json").read_text())
    assert key_rejection("why") == (400, refusals["no_key"]["body"].encode(), refusals["no_key"]["content_type"])
    assert FORBIDDEN == refusals["deny_listed"]["body"].encode()
