"""What the HTTP layer answers: the fields of a checked request (the rate-limit ones, Retry-After, the
store-failure field), encoded as ASGI sends them too, and the 429 or 403 of a refusal (``Refusal``), the 400 of a
request without a key."""

from __future__ import annotations

import json
import time
from typing import Callable, Dict, List, Sequence, Tuple

from ._headers import ceil_seconds
from ._http_options import Options
from ._http_route import Check, Checked, Route
from ._native import Decision

__all__ = ["FORBIDDEN", "KEY_ERROR", "RATE_LIMIT_FIELDS", "Answers", "Refusal", "key_rejection"]

# The bodies no option words, the same in Node (tests/conformance/refusals.json).
FORBIDDEN = b"403 Forbidden\n"
KEY_ERROR = b"400 Bad Request: the client could not be identified\n"
PROBLEM_TYPE = "https://iana.org/assignments/http-problem-types#quota-exceeded"
PROBLEM_TITLE = "Request cannot be satisfied as assigned quota has been exceeded"


class Refusal:
    """A 429 as the adapter writes it: fields (the rate-limit ones and Retry-After), a body and its type; ``policy``
    and ``name`` of the refused limit, its ``decision`` and ``retry_after`` (whole seconds)."""

    __slots__ = ("status", "headers", "body", "content_type", "policy", "name", "decision", "retry_after")

    def __init__(self, status: int, headers: List[Tuple[str, str]], body: bytes, content_type: str, policy: str,
                 name: str, decision: Decision, retry_after: int) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.content_type = content_type
        self.policy = policy
        self.name = name
        self.decision = decision
        self.retry_after = retry_after

    def __repr__(self) -> str:
        return f"Refusal({self.policy!r}, name={self.name!r}, retry_after={self.retry_after})"


class Answers:
    """The Gate's answers to a checked request."""

    options: Options
    _merged: Dict[Tuple[int, ...], Route]
    merge: Callable[[Sequence[Route]], Route]  # Binding's

    def fields_of(self, checks: Sequence[Checked]) -> List[Tuple[str, str]]:
        """The fields of every check made on one request (the app's, then its route's: ASGI, Django), as one set."""
        if len(checks) == 1:
            return self.fields(checks[0])
        ids = tuple(id(c.route) for c in checks)
        route = self._merged.get(ids)
        if route is None:
            route = self._merged[ids] = self.merge([c.route for c in checks])
        merged = Checked(route)
        offset = 0
        for c in checks:
            merged.decisions[offset:offset + len(c.decisions)] = c.decisions
            if c.refused >= 0:
                merged.refused, merged.refusal, merged.forbidden = offset + c.refused, c.refusal, c.forbidden
            merged.store_failure = merged.store_failure or c.store_failure
            offset += len(c.decisions)
        return self.fields(merged)

    def fields(self, checked: Checked) -> List[Tuple[str, str]]:
        """The fields of a response to a checked request: the decisions the limiter computed (Retry-After only with
        a refusal: shadow mode shows a would-be refusal's numbers, never a wait), and the store-failure field when a
        limit was skipped because the store failed."""
        route_fields = checked.route.fields
        fields = route_fields.call(checked.decisions, time.time_ns() // 1000 if route_fields.legacy else 0)
        if checked.refused < 0 or checked.forbidden:
            if fields and fields[-1][0] == "Retry-After":
                fields.pop()
        elif not fields or fields[-1][0] != "Retry-After":  # fail closed: no decision, the wait alone
            fields.append(("Retry-After", str(_retry_after(checked.refusal))))
        if checked.store_failure is not None and self.options.store_failure_header:
            fields.append((self.options.store_failure_header, checked.store_failure))
        return fields

    def raw_fields(self, checks: Sequence[Checked]) -> List[Tuple[bytes, bytes]]:
        """``fields_of(checks)`` encoded, as ASGI sends them."""
        if len(checks) == 1:  # the usual request, allowed by one limit: its fields made as bytes at once
            checked = checks[0]
            raw_allowed = checked.route.fields.raw_allowed
            if raw_allowed is not None and checked.refused < 0 and checked.store_failure is None:
                d = checked.decisions[0]
                if d is not None and d.allowed:
                    return raw_allowed(d)
        raw = _RAW
        out = []
        for name, value in self.fields(checks[0]) if len(checks) == 1 else self.fields_of(checks):
            encoded = raw.get(name)
            if encoded is None:  # the few names fields() gives: the rate-limit ones, the store-failure option's
                encoded = raw[name] = name.encode("latin-1")
            if name == "RateLimit-Policy":  # one text per route: encoded once
                text = raw.get(value)
                if text is None:
                    text = raw[value] = value.encode("latin-1")
                out.append((encoded, text))
            else:
                out.append((encoded, value.encode("latin-1")))
        return out

    def refusal(self, checked: Checked, with_fields: bool = True) -> Refusal:
        """The 429 of a refused request, in the form the ``refusal`` option asks (a custom handler is the
        adapter's to call, with this); ``with_fields=False`` leaves ``headers`` empty, for an adapter that adds the
        fields of every check of the request later."""
        check = checked.route.checks[checked.refused]
        decision = checked.refusal
        assert decision is not None
        if checked.forbidden:  # the deny list: no quota to tell of
            return Refusal(403, [], FORBIDDEN, "text/plain; charset=utf-8", check.spec.policy, check.name, decision, 0)
        wait = _retry_after(decision)
        headers = self.fields(checked) if with_fields else []
        if self.options.refusal == "problem":
            body = json.dumps({
                "type": PROBLEM_TYPE, "title": PROBLEM_TITLE, "status": 429,
                "detail": f"{check.spec.policy} exceeded; retry in {wait} s",
                "violated-policies": [_policy_name(checked, check)],
            }).encode()
            content_type = "application/problem+json"
        else:
            body = f"429 Too Many Requests: {check.spec.policy} exceeded; retry in {wait} s\n".encode()
            content_type = "text/plain; charset=utf-8"
        return Refusal(429, headers, body, content_type, check.spec.policy, check.name, decision, wait)


# The rate-limit fields of every style, lower-cased: an app's own are replaced by ours.
RATE_LIMIT_FIELDS = ("ratelimit", "ratelimit-policy", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset",
                     "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")

_RAW: Dict[str, bytes] = {}  # field names and RateLimit-Policy texts, encoded


def key_rejection(reason: str) -> Tuple[int, bytes, str]:
    """The 400 of a request without a key (on_key_error = "reject")."""
    del reason  # logged, not told to the client: it may name the app's internals
    return 400, KEY_ERROR, "text/plain; charset=utf-8"


def _retry_after(decision: Decision) -> int:
    # As the fields' t: never earlier than the end of the effective window.
    return ceil_seconds(decision.retry_after_us)


def _policy_name(checked: Checked, check: Check) -> str:
    """The refused policy's name as the fields show it."""
    quotas = checked.route.names[checked.refused]
    decision = checked.refusal
    return quotas[decision.policy_index if decision is not None and decision.policy_index < len(quotas) else 0]
