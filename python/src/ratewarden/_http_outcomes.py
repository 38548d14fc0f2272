"""What a limit's outcome does to the request being checked, and to the Gate's counts and log: a refusal (or, in
shadow mode, a would-be one), a store failure under ``on_store_error``, a key failure under ``on_key_error``, an
allow-, deny- or block-listed client (docs/key-lists.md), a refund that failed."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from typing import Any, Dict, Union

from ._errors import StoreError
from ._http_options import Options
from ._http_route import Check, Checked
from ._limiter import Limiter
from ._native import Decision
from .keys import NoKey

__all__ = ["Outcomes", "ThrottledLog"]

log = logging.getLogger("ratewarden")

FAILURE_LOG_INTERVAL_S = 10.0

# A store that is missing (refused, cut, timed out) is told of by the core's events on this same logger — "store
# failed", then "store recovered", once a second at most per store (_events.py) — so a failure of that kind is not
# logged here a second time. An error reply (the store is there but refused the call) has no event: it is.
_TOLD_BY_EVENTS = frozenset(("store_unavailable", "store_timeout"))


class ThrottledLog:
    """Logs a kind of event at most once per ``interval_s``, saying how many were not logged meanwhile: a store that
    is down, or a flood of requests without a key, gives a line every few seconds, not one per request."""

    def __init__(self, interval_s: float = FAILURE_LOG_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._next: Dict[str, float] = {}
        self._muted: Counter[str] = Counter()

    def __call__(self, level: int, kind: str, message: str, *args: Any) -> None:
        now = time.monotonic()
        with self._lock:
            if now < self._next.get(kind, 0.0):
                self._muted[kind] += 1
                return
            self._next[kind] = now + self.interval_s
            muted = self._muted.pop(kind, 0)
        if muted:
            message += " (and %d more since the last report)"
            args = (*args, muted)
        log.log(level, message, *args)


def _fail_closed(limiter: Limiter) -> Decision:
    """The refusal of a store failure when failing closed: retry in 1 s, or the shortest period if shorter."""
    wait = min([1_000_000, *(p.period_us for p in limiter.policies)])
    first = limiter.policies[0]
    return Decision(allowed=False, limit=first.limit, remaining=0, reset_after_us=wait, retry_after_us=wait, used=0)


class Outcomes:
    """The Gate's outcomes: each applies one to ``checked`` and says whether it stops the request."""

    options: Options
    counts: Counter[str]
    failure_log: ThrottledLog
    _lock: threading.Lock

    def _apply_listing(self, checked: Checked, i: int, check: Check, listed: Union[str, float]) -> bool:
        """True when the request is refused."""
        if listed == "allow":
            with self._lock:
                self.counts["allow_listed"] += 1
            return False
        limit = check.limiter.policies[0].limit
        if listed == "deny":
            with self._lock:
                self.counts["deny_listed"] += 1
            if check.shadow:
                self.failure_log(logging.WARNING, "shadow", "ratewarden (shadow mode): a deny-listed client would "
                                 "have been refused")
                return False
            checked.refused, checked.forbidden = i, True
            checked.refusal = _exhausted(limit, 1_000_000)  # no field shows it: a 403 tells of no quota
            return True
        with self._lock:
            self.counts["blocked"] += 1
        blocked = checked.decisions[i] = _exhausted(limit, int(listed * 1e6))  # the limit's, until the block ends
        return self._refuse(checked, i, check, blocked)

    def _refuse(self, checked: Checked, i: int, check: Check, decision: Decision) -> bool:
        """A refusal: True when it stops the request; in shadow mode it is logged and counted, and the request
        goes on."""
        with self._lock:
            self.counts["shadow_refused" if check.shadow else "refused"] += 1
        if check.shadow:
            self.failure_log(logging.WARNING, "shadow", "ratewarden (shadow mode): %s would have refused a request",
                             check.spec.policy)
            return False
        checked.refused, checked.refusal = i, decision
        return True

    def _store_failed(self, checked: Checked, i: int, check: Check, error: StoreError) -> bool:
        """Applies on_store_error; True when the request is refused (fail closed)."""
        with self._lock:
            self.counts["store_failures"] += 1
        mode = check.on_store_error
        if error.code not in _TOLD_BY_EVENTS:
            self.failure_log(logging.ERROR, "store", "ratewarden: the store failed (%s), rate limit %s %s: %s",
                             error.code, check.spec.policy,
                             {"allow": "skipped (fail open)", "deny": "refused (fail closed)"}.get(mode, "raised"),
                             error)
        if mode == "raise":
            raise error
        # Counted where the core counts its own on_store_error decisions (ratewarden_decisions_total, fallbacks):
        # a refusal in shadow mode too, as a decision the store made would be.
        check.limiter._count_fallback(mode == "allow", check.cost if check.cost.__class__ is int else 1)
        if mode == "allow":
            checked.store_failure = error.code.replace("_", "-")  # store-unavailable: Node's value too
            return False
        if check.shadow:
            return False
        checked.refused, checked.refusal = i, _fail_closed(check.limiter)
        return True

    def _key_failed(self, checked: Checked, check: Check, error: Exception) -> bool:
        """Applies on_key_error, having logged why no key could be made; True when the request is rejected."""
        with self._lock:
            self.counts["key_failures"] += 1
        mode = self.options.on_key_error
        reason = str(error) if isinstance(error, (NoKey, TypeError, ValueError)) else f"{type(error).__name__}: {error}"
        self.failure_log(logging.WARNING, "key", "ratewarden: no key for rate limit %s (%s); the request is %s",
                         check.spec.policy, reason,
                         {"reject": "rejected (400)", "skip": "not limited by it"}.get(mode, "failed"))
        if mode == "raise":
            raise error
        if mode == "skip":
            return False
        checked.key_error = reason
        return True

    def _refund_failed(self, check: Check, error: StoreError) -> None:
        with self._lock:
            self.counts["store_failures"] += 1
        if error.code not in _TOLD_BY_EVENTS:
            self.failure_log(logging.ERROR, "store", "ratewarden: the store failed (%s), rate limit %s kept a hit its "
                             "count_when did not count: %s", error.code, check.spec.policy, error)


def _exhausted(limit: int, wait_us: int) -> Decision:
    """A refusal with nothing left for `wait_us`: a blocked client's, a deny-listed one's."""
    return Decision(allowed=False, limit=limit, remaining=0, reset_after_us=wait_us, retry_after_us=wait_us, used=limit)
