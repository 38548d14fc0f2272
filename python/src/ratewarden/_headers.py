"""HTTP fields for rate-limited responses: the IETF draft's RateLimit-Policy and RateLimit (draft-ietf-httpapi-
ratelimit-headers-10, Structured Field lists), Retry-After and the legacy X-RateLimit-* trio."""

from __future__ import annotations

import time
from typing import Dict, Iterable, Tuple

from ._native import Decision, Policy

__all__ = ["ceil_seconds", "legacy_fields", "policy_item", "ratelimit_item", "sf_string"]


def ceil_seconds(us: int) -> int:
    """Whole seconds, rounded up: a client that waits that long is never early."""
    return -(-us // 1_000_000)


def sf_string(text: str) -> str:
    """``text`` as a Structured Field String (RFC 8941 §3.3.3)."""
    if any(not (0x20 <= ord(c) < 0x7F) for c in text):
        raise ValueError(f"a policy name must be printable ASCII, got {text!r}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def policy_item(sf_name: str, policy: Policy) -> str:
    """One RateLimit-Policy item (``sf_name`` from sf_string): the quota ``q`` per window ``w`` in seconds."""
    return f"{sf_name};q={policy.limit};w={ceil_seconds(policy.period_us)}"


def ratelimit_item(sf_name: str, decision: Decision) -> str:
    """One RateLimit item: ``r`` remaining, ``t`` seconds until the quota is full again."""
    return f"{sf_name};r={decision.remaining};t={ceil_seconds(decision.reset_after_us)}"


def legacy_fields(decision: Decision) -> Iterable[Tuple[str, str]]:
    """X-RateLimit-Limit / -Remaining / -Reset (the Unix time, in whole seconds, at which the quota is full)."""
    fields: Dict[str, str] = {
        "X-RateLimit-Limit": str(decision.limit),
        "X-RateLimit-Remaining": str(decision.remaining),
        "X-RateLimit-Reset": str(int(time.time()) + ceil_seconds(decision.reset_after_us)),
    }
    return fields.items()
