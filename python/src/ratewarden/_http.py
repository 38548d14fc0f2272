"""The HTTP layer every adapter stands on (flask.py, asgi.py, django.py), framework-neutral. An adapter supplies
readers of its requests (an ``access`` object: _http_readers.py) and applies what the ``Gate`` answers to its
responses. The layer's modules, each of one concern:

- _http_options.py: the options (``Options``) and a limit as declared (``LimitSpec``);
- _http_readers.py: the client address key, a key function's value as a key;
- _http_route.py: a route's limits bound to the store (``Route``, ``Check``) and what a check found (``Checked``);
- _http_steps.py: the drivers of the sans-I/O steps (``run``, ``arun``);
- _http_outcomes.py: what a refusal, a store or key failure, a listed client does to the request, counts and log;
- _http_answers.py: the fields of a response, the refusal (``Refusal``) and the key error;
- this module: the ``Gate`` (one app's limits) and the check of a request, written once as steps that ``check``
  and ``acheck`` drive (a plain route, ``Route.plain``, decided in one call), and the names the adapters import.
"""

from __future__ import annotations

import inspect
import threading
from collections import Counter
from typing import Any, Dict, Optional, Tuple, Union

from ._errors import StoreError
from ._http_answers import FORBIDDEN, KEY_ERROR, RATE_LIMIT_FIELDS, Answers, Refusal, key_rejection
from ._http_options import COUNT_WHEN, OPTIONS, LimitSpec, Options
from ._http_outcomes import Outcomes, ThrottledLog
from ._http_readers import list_key, prefixed_key, address_of, address_reader, key_text, wrapped_chain
from ._http_route import Binding, Check, Checked, Route
from ._http_steps import AWAIT, Steps, arun, run
from ._limiter import Limiter
from ._lists import KeyList
from ._native import Decision

__all__ = ["COUNT_WHEN", "FORBIDDEN", "KEY_ERROR", "OPTIONS", "RATE_LIMIT_FIELDS", "Check", "Checked", "Gate",
           "LimitSpec", "Options", "Refusal", "Route", "address_of", "address_reader", "key_rejection", "key_text",
           "wrapped_chain"]


class Gate(Binding, Outcomes, Answers):
    """One app's limits: its options, its bound limiters, and the check of a request. ``access`` reads the adapter's
    requests: ``address_key(options)`` gives the address key function, ``header(req, name)``, ``user(req)``,
    ``form(req, name)``; ``call(func)`` turns a user's function (key, cost, skip) into a function of the request."""

    def __init__(self, options: Options, access: Any) -> None:
        self.options = options
        self.access = access
        self.address_key = access.address_key(options)
        self.skip = access.call(options.skip) if options.skip is not None else None
        self.failure_log = ThrottledLog()
        # By id() of a LimitSpec (which the adapter's registry keeps) and the name of what it counts under.
        self._limiters: Dict[Tuple[int, str], Limiter] = {}
        self._merged: Dict[Tuple[int, ...], Route] = {}  # by the id()s of routes, which their adapter keeps
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()  # refused, shadow_refused, store_failures, key_failures (under _lock)
        self.app_spec = (LimitSpec.make(options.application, scope="@app", name="application")
                         if options.application else None)
        self.default_spec = (LimitSpec.make(options.default, name="default", algorithm=options.algorithm)
                             if options.default else None)
        # Looked up before each limit (docs/key-lists.md): an allowed client skips it, a denied one is refused with
        # 403, and with block_duration a client a limit refused stays refused that long, on every process.
        self.blocked = (KeyList("blocked", options.store, duration=options.block_duration)
                        if options.block_duration else None)
        self.lookups = options.allow_list is not None or options.deny_list is not None or self.blocked is not None
        # Every field name fields() may give, lower-cased: a response with none of them takes ours as they are.
        self.field_names = frozenset((*RATE_LIMIT_FIELDS, "retry-after", *(
            (options.store_failure_header.lower(),) if options.store_failure_header else ())))
        # The same as ASGI sends them, and their lengths: a response's field whose length is none of these is not
        # lower-cased to be looked up (asgi, on every response).
        self.raw_field_names = frozenset(n.encode("latin-1") for n in self.field_names)
        self.raw_field_lengths = frozenset(len(n) for n in self.raw_field_names)
        self.settles = False  # whether a limit has count_when: a response must then be settled (settle())

    def stats(self) -> Dict[str, int]:
        """What the limits met since start: ``refused``, ``shadow_refused`` (would have been, in shadow mode),
        ``store_failures``, ``key_failures``, and the lists' ``allow_listed``, ``deny_listed``, ``blocked``."""
        with self._lock:
            return {k: self.counts[k] for k in ("refused", "shadow_refused", "store_failures", "key_failures",
                                                 "allow_listed", "deny_listed", "blocked")}

    # --- checking ------------------------------------------------------------------------------------------------

    def check(self, route: Route, req: Any, method: str) -> Optional[Checked]:
        """Hits the route's limits for ``req``, in order, until one refuses. None when the route has no limit. A
        plain route (``Route.plain``) is decided here in one call, as ``_steps`` would decide it."""
        if not route.checks:
            return None
        plain = route.plain
        if plain is not None:
            try:
                key = plain.key(req)
                if key:
                    return self.decided(route, plain.hit(plain.prefix + key, plain.cost))
            except StoreError as error:
                return self.decided(route, None, error)
            except Exception:  # nothing counted (no key, one the store refuses): the steps answer it
                pass
        return run(self._steps(route, req, method, False))

    async def acheck(self, route: Route, req: Any, method: str) -> Optional[Checked]:
        """``check`` for asyncio: the store is asked through ``ahit``; a key function may be a coroutine."""
        if not route.checks:
            return None
        return await arun(self._steps(route, req, method, True))

    def _steps(self, route: Route, req: Any, method: str, awaits: bool) -> Steps:
        """The check of one request without its I/O (``check`` and ``acheck`` drive it: ``run``, ``arun``): it yields
        each store call it needs and is sent its result, or thrown its error. ``awaits``: a key or cost function may
        return an awaitable, yielded to be awaited."""
        checked = Checked(route)
        decisions = checked.decisions
        for i, check in enumerate(route.checks):
            if check.methods is not None and method not in check.methods:
                continue
            try:
                raw = check.key(req)
                if awaits and raw.__class__ is not str and inspect.isawaitable(raw):
                    raw = yield AWAIT, None, raw
                key = check.prefix + raw if raw.__class__ is str and raw else prefixed_key(check.prefix, raw)
            except Exception as error:  # no key
                if self._key_failed(checked, check, error):
                    return checked
                continue
            # Out of the key's failures: a cost function's error, or a cost the core refuses, is the app's bug (it
            # propagates), not a client that could not be identified.
            cost = check.cost
            if cost.__class__ is not int:
                cost = cost(req)
                if awaits and inspect.isawaitable(cost):
                    cost = yield AWAIT, None, cost
            try:
                if self.lookups:
                    listed = yield from self._listed(raw, key)
                    if listed is not None:
                        if self._apply_listing(checked, i, check, listed):
                            return checked
                        continue
                # A store that never waits (memory) answers at once, as ahit would, without a coroutine.
                decision = yield check.hit, None if check.in_process else check.ahit, (key, cost)
                if self.blocked is not None and not decision.allowed:
                    yield self.blocked.add, self.blocked.aadd, (key,)
            except StoreError as error:
                if self._store_failed(checked, i, check, error):
                    return checked
                continue
            except Exception as error:  # a key the store cannot hold (too long), or a cost the core refuses
                if not (cost.__class__ is int and 0 < cost <= check.limiter.max_cost):  # the cost's fault: the app's
                    raise
                if self._key_failed(checked, check, error):
                    return checked
                continue
            decisions[i] = decision
            if not decision.allowed:
                if self._refuse(checked, i, check, decision):
                    return checked
            elif check.count_when is not None:
                _charge(checked, check, key, cost)
        return checked

    def decided(self, route: Route, decision: Optional[Decision], error: Optional[StoreError] = None) -> Checked:
        """What ``check`` finds on a route of one limit whose decision, or store error, was met elsewhere (a plain
        route: ``check``'s and asgi's short paths)."""
        checked = Checked(route)
        if error is not None:
            self._store_failed(checked, 0, route.checks[0], error)
        else:
            assert decision is not None
            checked.decisions[0] = decision
            if not decision.allowed:
                self._refuse(checked, 0, route.checks[0], decision)
        return checked

    # --- the lists (docs/key-lists.md) ---

    def _listed(self, raw: Any, key: Union[str, bytes]) -> Steps:
        """Steps whose value is "allow", "deny", the seconds a block has left, or None: the limit decides."""
        o = self.options
        if o.allow_list is not None and (yield o.allow_list.contains, o.allow_list.acontains, (list_key(raw),)):
            return "allow"
        if o.deny_list is not None and (yield o.deny_list.contains, o.deny_list.acontains, (list_key(raw),)):
            return "deny"
        if self.blocked is None:
            return None
        return (yield self.blocked.expires_in, self.blocked.aexpires_in, (key,)) or None

    # --- counting only what matters ---

    def settle(self, checked: Checked, status: int) -> None:
        """After the response: gives back the hits of limits whose ``count_when(status)`` is false (e.g. a login
        limit that counts only failures: ``count_when=lambda status: status >= 400``). A store failure is logged."""
        run(self._refunds(checked, status))

    async def asettle(self, checked: Checked, status: int) -> None:
        """``settle`` for asyncio."""
        await arun(self._refunds(checked, status))

    def _refunds(self, checked: Checked, status: int) -> Steps:
        """The refunds ``settle`` and ``asettle`` make, as steps."""
        for check, key, cost in checked.charged or ():
            if not check.count_when(status):  # type: ignore[misc]
                try:
                    yield check.limiter.refund, check.limiter.arefund, (key, cost)
                except StoreError as error:
                    self._refund_failed(check, error)


def _charge(checked: Checked, check: Check, key: Union[str, bytes], cost: int) -> None:
    if checked.charged is None:
        checked.charged = []
    checked.charged.append((check, key, cost))
