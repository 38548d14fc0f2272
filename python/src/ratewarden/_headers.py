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

__all__ = ["STYLES", "Fields", "Quota", "Report", "ceil_seconds", "rate_limit_fields", "sf_string"]

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


class Fields:
    """The fields of the responses of one route (or any fixed set of limits): ``quotas`` holds each limit's policies,
    in the limiter's order; what depends only on them (the policies' field texts) is built once, here, and each call
    adds only the decisions' numbers."""

    __slots__ = ("legacy", "_style", "_names", "_policy", "_short_policies", "call", "raw_allowed", "_raw_policy",
                 "_raw_name")

    def __init__(self, quotas: Sequence[Sequence[Quota]], style: Optional[str], legacy: bool) -> None:
        self.legacy = legacy
        self._style = style
        self._names = [[sf_string(q.name) for q in qs] for qs in quotas]  # every name checked, whatever the style
        self._policy = ", ".join(
            f"{name};q={q.limit};w={ceil_seconds(q.period_us)}"
            for qs, names in zip(quotas, self._names)
            for q, name in zip(qs, names)
        )
        self._short_policies = [", ".join(f"{q.limit};w={ceil_seconds(q.period_us)}" for q in qs) for qs in quotas]
        # What __call__ does, as the fastest bound method for these limits (one call less, for the HTTP layer).
        one = style == "draft-8" and not legacy and [len(qs) for qs in quotas] == [1]
        self.call = self._one if one else self._any
        # The fields of an allowed decision encoded, as ASGI sends them, for that usual route (else None).
        self.raw_allowed = self._raw_allowed if one else None
        self._raw_policy = self._policy.encode() if one else b""
        self._raw_name = self._names[0][0].encode() if one else b""

    def __call__(self, decisions: Sequence[Optional[Decision]], now_us: int) -> List[Tuple[str, str]]:
        return self.call(decisions, now_us)

    def _one(self, decisions: Sequence[Optional[Decision]], now_us: int) -> List[Tuple[str, str]]:
        """``_any`` for the usual route — one limit of one policy, draft-8 fields — with each number read once."""
        d = decisions[0]
        if d is None:
            return []
        if d.allowed:
            return [("RateLimit-Policy", self._policy),
                    ("RateLimit", f"{self._names[0][0]};r={d.remaining};t={-(-d.reset_after_us // 1_000_000)}")]
        window = str(-(-d.retry_after_us // 1_000_000))
        return [("RateLimit-Policy", self._policy), ("RateLimit", f"{self._names[0][0]};r={d.remaining};t={window}"),
                ("Retry-After", window)]

    def _raw_allowed(self, d: Decision) -> List[Tuple[bytes, bytes]]:
        """``_one`` of an allowed decision, in bytes."""
        return [(b"RateLimit-Policy", self._raw_policy),
                (b"RateLimit", b"%s;r=%d;t=%d" % (self._raw_name, d.remaining, -(-d.reset_after_us // 1_000_000)))]

    def _any(self, decisions: Sequence[Optional[Decision]], now_us: int) -> List[Tuple[str, str]]:
        """The fields for one decision (or None: not checked) per limit; ``now_us`` matters only to legacy fields.

        The fields that hold one decision (draft-6/7, legacy, Retry-After) show the denial if there is one, else the
        lowest remaining, the first of equals. (Called on every limited response: each attribute of a decision is
        read once.)"""
        d: Optional[Decision]
        if len(decisions) == 1:  # the common route: one limit
            shown, d = 0, decisions[0]
            if d is None:
                return []
            allowed = d.allowed
            remaining = d.remaining
        else:
            shown, d, allowed, remaining = -1, None, True, 0
            for i, x in enumerate(decisions):
                if x is not None:
                    if not x.allowed:
                        shown, d, allowed, remaining = i, x, False, x.remaining
                        break
                    if d is None or x.remaining < remaining:
                        shown, d, remaining = i, x, x.remaining
            if d is None:
                return []
        # t (and draft-6/7's reset): until the quota is full again, or for a denial until the call is allowed, so
        # that Retry-After never points before the end of the effective window (the draft's §6).
        window = ceil_seconds(d.reset_after_us if allowed else d.retry_after_us)
        style = self._style
        fields: List[Tuple[str, str]]
        if style == "draft-8":
            if len(decisions) == 1:
                names = self._names[0]
                name = names[d.policy_index] if len(names) > 1 else names[0]
                items = f"{name};r={remaining};t={window}"
            else:
                items = ", ".join(
                    f"{self._names[i][x.policy_index]};r={x.remaining};t={_window(x)}"
                    for i, x in enumerate(decisions)
                    if x is not None
                )
            fields = [("RateLimit-Policy", self._policy), ("RateLimit", items)]
        elif style == "draft-7":
            fields = [
                ("RateLimit-Policy", self._short_policies[shown]),
                ("RateLimit", f"limit={d.limit}, remaining={remaining}, reset={window}"),
            ]
        elif style == "draft-6":
            fields = [
                ("RateLimit-Policy", self._short_policies[shown]),
                ("RateLimit-Limit", str(d.limit)),
                ("RateLimit-Remaining", str(remaining)),
                ("RateLimit-Reset", str(window)),
            ]
        else:
            fields = []
        if self.legacy:
            fields += [
                ("X-RateLimit-Limit", str(d.limit)),
                ("X-RateLimit-Remaining", str(remaining)),
                ("X-RateLimit-Reset", str(ceil_seconds(now_us + d.reset_after_us))),  # Unix time of a full quota
            ]
        if not allowed:
            fields.append(("Retry-After", str(window)))  # the wait, as t
        return fields


def _window(decision: Decision) -> int:
    return ceil_seconds(decision.reset_after_us if decision.allowed else decision.retry_after_us)


def rate_limit_fields(
    reports: Sequence[Report], style: Optional[str], legacy: bool, now_us: int
) -> List[Tuple[str, str]]:
    """The fields of a response on which ``reports`` were made: ``style`` is one of STYLES or None (no RateLimit
    fields), ``legacy`` adds X-RateLimit-*, ``now_us`` is the Unix time in µs (for X-RateLimit-Reset). A denial
    always gets Retry-After. No report with a decision, no field. (:class:`Fields` with its texts built once.)"""
    return Fields([r.quotas for r in reports], style, legacy)([r.decision for r in reports], now_us)
