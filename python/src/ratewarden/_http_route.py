"""A route's limits bound to the store (``Route``: one ``Check`` per limit, the fields their decisions give), resolved
once per route, and what the check of one request found (``Checked``)."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ._headers import Fields, Quota
from ._http_options import LimitSpec, Options
from ._limiter import Limiter
from ._limiter_name import limiter_name
from ._native import Decision
from .keys import KeyPart

__all__ = ["Binding", "Check", "Checked", "Route"]


class Check:
    """A limit bound to a store and a route: what a request needs of it, resolved once."""

    __slots__ = ("spec", "limiter", "hit", "ahit", "in_process", "key", "prefix", "cost", "methods",
                 "on_store_error", "shadow", "name", "needs_form", "count_when", "sync")

    def __init__(self, spec: LimitSpec, limiter: Limiter, key: Callable[[Any], Any], cost: Any, prefix: str,
                 name: str, on_store_error: str, shadow: bool, needs_form: bool, sync_key: bool) -> None:
        self.spec = spec
        self.limiter = limiter
        self.hit = limiter.hit
        self.ahit = limiter.ahit
        self.in_process = limiter.store.in_process
        self.key = key
        self.prefix = prefix
        self.cost = cost  # an int, or a function of the request
        self.methods = spec.methods
        self.on_store_error = on_store_error
        self.shadow = shadow
        self.name = name
        self.needs_form = needs_form
        self.count_when = spec.count_when
        # Decided without awaiting anything: a store that never waits, a key of ours (no user function, which may
        # be a coroutine), a constant cost.
        self.sync = self.in_process and sync_key and cost.__class__ is int


@dataclass(eq=False)
class Route:
    """The limits of one route, and the fields their decisions give (texts built once)."""

    checks: List[Check]
    fields: Fields
    names: List[List[str]]  # per limit, its policies' names in the fields
    needs_form: bool = False
    sync: bool = False  # Gate.check gives what Gate.acheck would, without a coroutine (see Check.sync)
    # The plain route's one check: one limit by client address, of a fixed cost, on every method, without count_when,
    # lists or skip, whose allowed fields have a short cut (Fields.raw_allowed). An adapter may decide its requests
    # itself, as ``check`` would (asgi's short path); None for any other route.
    plain: Optional[Check] = None


class Checked:
    """What the check of one request found: a decision per limit (None: not checked, or not computed because the
    store failed), the refused limit's index (or -1), the store failure that was let through (its code), and a key
    failure to reject the request with; ``charged``: the hits of limits with ``count_when`` (see ``Gate.settle``)."""

    # Defaults as class attributes: a request that finds nothing unusual sets only route and decisions.
    charged: Optional[List[Tuple[Check, Union[str, bytes], int]]] = None  # what count_when may refund
    refused = -1
    refusal: Optional[Decision] = None  # the refusing decision (fail closed: made here, not in the fields)
    store_failure: Optional[str] = None
    key_error: Optional[str] = None
    forbidden = False  # refused because the client is on the deny list (403)

    def __init__(self, route: Route) -> None:
        self.route = route
        self.decisions: List[Optional[Decision]] = [None] * len(route.checks)


class Binding:
    """The Gate's binding: a route's limits bound to the store, once (a ``Route``)."""

    options: Options
    access: Any
    address_key: Callable[[Any], str]
    skip: Optional[Callable[..., Any]]
    lookups: bool
    settles: bool
    app_spec: Optional[LimitSpec]
    _limiters: Dict[Tuple[int, str], Limiter]
    _lock: threading.Lock

    def limiter(self, spec: LimitSpec, scope: str) -> Limiter:
        """The limiter of ``spec`` counting under ``scope`` (a route's name, a shared scope, ``@app``): one per pair,
        named after it (_limiter_name.py), so that its figures say which route's limit decided."""
        name = limiter_name(scope, spec.rates)
        limiter = self._limiters.get((id(spec), name))
        if limiter is None:
            with self._lock:
                limiter = self._limiters.get((id(spec), name))
                if limiter is None:
                    # "raise": the layer applies on_store_error itself, so that it knows the store failed (to log it,
                    # say so in a field, and not show a quota nobody computed).
                    limiter = self._limiters[(id(spec), name)] = Limiter(
                        spec.policy, self.options.store, algorithm=spec.algorithm or self.options.algorithm,
                        burst=spec.burst, prefix=self.options.prefix, on_store_error="raise", name=name)
        return limiter

    def key_function(self, key: Any, default: Any) -> Callable[[Any], Any]:
        """A limit's key (else the adapter's default key; else the client address) as a function of the request."""
        key = default if key is None else key
        if key is None:
            return self.address_key
        if isinstance(key, KeyPart):
            return key.bind(self.access, self.options)
        return self.access.call(key)

    @staticmethod
    def _own_key(key: Any, default: Any) -> bool:
        """Whether key_function(key, default) is ours (the address, a keys part): never a coroutine."""
        key = default if key is None else key
        return key is None or isinstance(key, KeyPart)

    def route(self, specs: Sequence[LimitSpec], route_name: str, route_id: str, default_key: Any = None, *,
              app_wide: bool = True, route_ids: Optional[Sequence[str]] = None) -> Route:
        """The bound checks of ``specs`` on one route: the app-wide limit first (one count for the whole app) unless
        ``app_wide`` is false, then the route's. Each limit of the route counts on its own (``<route_id>:``, then
        ``<route_id>#2:``...; ``route_ids`` gives each spec its own id) unless it names a shared scope
        (``<scope>:``), on every store alike."""
        ids = list(route_ids) if route_ids is not None else [route_id] * len(specs)
        if app_wide and self.app_spec:
            specs, ids = [self.app_spec, *specs], ["", *ids]
        own: Counter[str] = Counter()
        scopes: List[str] = []  # what each limit counts under: its keys' prefix, and its limiter's name
        for spec, rid in zip(specs, ids):
            if spec.scope is not None:
                scopes.append(spec.scope)
            else:
                own[rid] += 1
                scopes.append(rid if own[rid] == 1 else f"{rid}#{own[rid]}")
        limiters = [self.limiter(s, scope) for s, scope in zip(specs, scopes)]
        names = iter(_distinct([s.name or route_name for s, l in zip(specs, limiters) for _ in l.policies]))
        checks: List[Check] = []
        quotas: List[List[Quota]] = []  # per limit, one per policy in its order: what decision.policy_index indexes
        for spec, limiter, scope in zip(specs, limiters, scopes):
            if spec.count_when is not None:
                self.settles = True
            quotas.append([Quota(next(names), p.limit, p.period_us) for p in limiter.policies])
            prefix = f"{scope}:"
            checks.append(Check(
                spec, limiter, self.key_function(spec.key, default_key),
                spec.cost if isinstance(spec.cost, int) else self.access.call(spec.cost), prefix, spec.name or route_name,
                spec.on_store_error or self.options.on_store_error,
                self.options.shadow if spec.shadow is None else spec.shadow,
                isinstance(spec.key, KeyPart) and spec.key.needs_form, self._own_key(spec.key, default_key),
            ))
        # Fields checks every name: a route name that no field can carry fails here, not in every response.
        fields = Fields(quotas, self.options.headers, self.options.legacy_headers)
        return Route(checks, fields, [[q.name for q in qs] for qs in quotas], any(c.needs_form for c in checks),
                     not self.lookups and all(c.sync for c in checks), self._plain(checks, fields))

    def _plain(self, checks: Sequence[Check], fields: Fields) -> Optional[Check]:
        check = checks[0] if len(checks) == 1 else None
        if (check is not None and check.key is self.address_key and check.cost.__class__ is int and
                check.methods is None and check.count_when is None and not self.lookups and self.skip is None and
                fields.raw_allowed is not None):
            return check
        return None

    def merge(self, routes: Sequence[Route]) -> Route:
        """One route of the limits of several, in order."""
        checks = [c for r in routes for c in r.checks]
        names = [n for r in routes for n in r.names]
        quotas = [[Quota(n, p.limit, p.period_us) for n, p in zip(ns, c.limiter.policies)]
                  for ns, c in zip(names, checks)]
        return Route(checks, Fields(quotas, self.options.headers, self.options.legacy_headers), names,
                     any(r.needs_form for r in routes), all(r.sync for r in routes))


def _distinct(names: List[str]) -> List[str]:
    """A name used once stays; one used several times becomes name-1, name-2, ..."""
    total = Counter(names)
    seen: Counter[str] = Counter()
    out = []
    for name in names:
        if total[name] > 1:
            seen[name] += 1
            name = f"{name}-{seen[name]}"
        out.append(name)
    return out
