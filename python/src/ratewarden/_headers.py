"""The HTTP fields of rate-limited responses, framework-neutral: ``RateLimit-Policy`` and ``RateLimit`` as the IETF
draft *RateLimit header fields for HTTP* defines them (draft-ietf-httpapi-ratelimit-headers, the form of drafts 8 to
11, and the older forms of drafts 6 and 7), ``Retry-After``, and the legacy ``X-RateLimit-*`` trio.

Node's node/lib/headers.js is the same module: both run tests/conformance/headers.json, so they cannot drift.
Durations are whole seconds rounded up: a client that waits that long is never early.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ._native import Decision

__all__ = ["STYLES", "Quota", "Report", "ceil_seconds", "rate_limit_fields", "sf_string"]

STYLES = ("draft-6", "draft-7", "draft-8")


@dataclass(frozen=True)
class Quota:
    """One policy as the fields show it: its name, its ``limit`` per ``period_us``."""

    name: str
    limit: int
    period_us: int


@dataclass(frozen=True)
class Report:
    """One limit of a response: its policies, in the limiter's order, and its decision (None when the limit applies
    to the route but was not checked on this request)."""

    quotas: Sequence[Quota]
    decision: Optional[Decision]


def ceil_seconds(us: int) -> int:
    """Whole seconds, rounded up."""
    return -(-us // 1_000_000)


def sf_string(text: str) -> str:
    """``text`` as a Structured Field String (RFC 8941 §3.3.3); a ValueError when it is not printable ASCII."""
    if any(not (0x20 <= ord(c) < 0x7F) for c in text):
        raise ValueError(f"a policy name must be printable ASCII, got {text!r}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _window(decision: Decision) -> int:
    """``t`` (and draft-6/7's reset): until the quota is full again, or for a denial until the call is allowed, so
    that Retry-After never points before the end of the effective window (the draft's §6)."""
    return ceil_seconds(decision.reset_after_us if decision.allowed else decision.retry_after_us)


def rate_limit_fields(
    reports: Sequence[Report], style: Optional[str], legacy: bool, now_us: int
) -> List[Tuple[str, str]]:
    """The fields of a response on which ``reports`` were made: ``style`` is one of STYLES or None (no RateLimit
    fields), ``legacy`` adds X-RateLimit-*, ``now_us`` is the Unix time in µs (for X-RateLimit-Reset). A denial
    always gets Retry-After. No report with a decision, no field.

    The fields that hold one decision (draft-6/7, legacy, Retry-After) show the denial if there is one, else the
    lowest remaining, the first of equals."""
    decided = [(r.quotas, r.decision) for r in reports if r.decision is not None]  # (a denial is falsy)
    if not decided:
        return []
    quotas, d = next((x for x in decided if not x[1].allowed), None) or min(decided, key=lambda x: x[1].remaining)
    fields: List[Tuple[str, str]] = []
    if style == "draft-8":
        policies = [f"{sf_string(q.name)};q={q.limit};w={ceil_seconds(q.period_us)}" for r in reports for q in r.quotas]
        items = [f"{sf_string(qs[x.policy_index].name)};r={x.remaining};t={_window(x)}" for qs, x in decided]
        fields += [("RateLimit-Policy", ", ".join(policies)), ("RateLimit", ", ".join(items))]
    elif style in ("draft-6", "draft-7"):
        fields.append(("RateLimit-Policy", ", ".join(f"{q.limit};w={ceil_seconds(q.period_us)}" for q in quotas)))
        if style == "draft-7":
            fields.append(("RateLimit", f"limit={d.limit}, remaining={d.remaining}, reset={_window(d)}"))
        else:
            fields += [
                ("RateLimit-Limit", str(d.limit)),
                ("RateLimit-Remaining", str(d.remaining)),
                ("RateLimit-Reset", str(_window(d))),
            ]
    if legacy:
        fields += [
            ("X-RateLimit-Limit", str(d.limit)),
            ("X-RateLimit-Remaining", str(d.remaining)),
            ("X-RateLimit-Reset", str(ceil_seconds(now_us + d.reset_after_us))),  # Unix time of a full quota
        ]
    if not d.allowed:
        fields.append(("Retry-After", str(ceil_seconds(d.retry_after_us))))
    return fields
