"""The HTTP layer every adapter stands on (flask.py, asgi.py, django.py), framework-neutral: the options, keys, the
limits of a route bound to a store, the check of a request (sync and async), and what the response gets — the
rate-limit fields, a refusal's status, fields and body, the store-failure field. An adapter only reads its requests
(an ``access`` object: address, header, user, form) and writes its responses.

The "lookup before the limit" steps to come (deny/allow lists) belong in ``Gate.check``/``acheck``, before the first
``hit``.
"""

from __future__ import annotations

import inspect
import json
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, Generator, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ._client_key import DEFAULT_IPV6_SUBNET, check_ipv6_subnet, client_key
from ._errors import InvalidArgumentError, StoreError
from ._headers import STYLES, Fields, Quota, ceil_seconds, sf_string
from ._limiter import Limiter, open_store
from ._lists import KeyList
from ._native import Decision, Store
from .keys import KeyPart, NoKey

__all__ = ["OPTIONS", "Checked", "Gate", "LimitSpec", "Options", "Refusal", "address_of", "key_text"]

log = logging.getLogger("ratewarden")

STORE_ERROR_CHOICES = ("allow", "deny", "raise")
KEY_ERROR_CHOICES = ("reject", "skip", "raise")
REFUSAL_CHOICES = ("text", "problem")

# The one option set of every adapter: the keyword of RateLimiter(...) / the middleware, and (upper-cased) the key of
# Flask's RATEWARDEN_<NAME> configuration and of Django's settings.RATEWARDEN dictionary.
OPTIONS: Dict[str, Any] = {
    "enabled": True,
    "store": "memory://",
    "application": None,
    "default": None,
    "algorithm": "fixed_window",
    "prefix": None,
    "on_store_error": "allow",
    "on_key_error": "reject",
    "headers": True,
    "legacy_headers": False,
    "proxy_count": 0,
    "ipv6_subnet": DEFAULT_IPV6_SUBNET,
    "shadow": False,
    "refusal": "text",
    "store_failure_header": "RateLimit-Skipped",
    "skip": None,
    "allow_list": None,
    "deny_list": None,
    "block_duration": None,
}

# count_when's names (Node's countWhen takes the same): count failed (4xx, 5xx) or successful responses only.
COUNT_WHEN: Dict[str, Callable[[int], bool]] = {"failure": lambda status: status >= 400,
                                                "success": lambda status: status < 400}
# The bodies no option words, the same in Node (tests/conformance/refusals.json).
FORBIDDEN = b"403 Forbidden\n"
KEY_ERROR = b"400 Bad Request: the client could not be identified\n"
PROBLEM_TYPE = "https://iana.org/assignments/http-problem-types#quota-exceeded"
PROBLEM_TITLE = "Request cannot be satisfied as assigned quota has been exceeded"
FAILURE_LOG_INTERVAL_S = 10.0


def _choice(name: str, value: Any, choices: Iterable[str]) -> Any:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def _header_style(name: str, value: Union[bool, str]) -> Optional[str]:
    """``headers``: a style, or a truth value as before styles existed (true: the newest draft's form)."""
    if not isinstance(value, str):
        return "draft-8" if value else None
    return _choice(name, value, STYLES)


@dataclass(frozen=True)
class Options:
    """The options, checked; ``name(option)`` gives the name the user wrote (``RATEWARDEN_STORE``, ``store``...)."""

    enabled: bool
    store: Store
    application: Optional[str]
    default: Optional[str]
    algorithm: str
    prefix: Optional[str]
    on_store_error: str
    on_key_error: str
    headers: Optional[str]
    legacy_headers: bool
    proxy_count: int
    ipv6_subnet: int
    shadow: bool
    refusal: Union[str, Callable[..., Any]]
    store_failure_header: Optional[str]
    skip: Optional[Callable[..., Any]]
    allow_list: Optional[KeyList]
    deny_list: Optional[KeyList]
    block_duration: Optional[float]

    @staticmethod
    def read(values: Mapping[str, Any], name: Callable[[str], str]) -> "Options":
        """Options from ``values`` (every key of OPTIONS); a bad one raises a ValueError that says ``name(key)``."""
        unknown = set(values) - set(OPTIONS)
        if unknown:
            raise ValueError(f"unknown option{'s' if len(unknown) > 1 else ''}: {', '.join(map(name, sorted(unknown)))}")
        v = {**OPTIONS, **values}
        check_ipv6_subnet(name("ipv6_subnet"), v["ipv6_subnet"])
        proxies = v["proxy_count"]
        if isinstance(proxies, bool) or not isinstance(proxies, int) or proxies < 0:
            raise ValueError(f"{name('proxy_count')} must be an integer >= 0, got {proxies!r}")
        refusal = v["refusal"]
        if not callable(refusal):
            _choice(name("refusal"), refusal, REFUSAL_CHOICES)
        if v["skip"] is not None and not callable(v["skip"]):
            raise ValueError(f"{name('skip')} must be a function of the request, got {v['skip']!r}")
        header = v["store_failure_header"]
        if header is not None and (not isinstance(header, str) or not header.isascii() or not header):
            raise ValueError(f"{name('store_failure_header')} must be a header name or None, got {header!r}")
        for option in ("allow_list", "deny_list"):
            if v[option] is not None and not isinstance(v[option], KeyList):
                raise ValueError(f"{name(option)} must be a ratewarden.KeyList, got {v[option]!r}")
        block = v["block_duration"]
        if block is not None and (isinstance(block, bool) or not isinstance(block, (int, float)) or not block > 0):
            raise ValueError(f"{name('block_duration')} must be a number of seconds > 0, got {block!r}")
        store = v["store"]
        options = Options(
            enabled=bool(v["enabled"]),
            store=store if isinstance(store, Store) else open_store(store),
            application=v["application"],
            default=v["default"],
            algorithm=v["algorithm"],
            prefix=v["prefix"],
            on_store_error=_choice(name("on_store_error"), v["on_store_error"], STORE_ERROR_CHOICES),
            on_key_error=_choice(name("on_key_error"), v["on_key_error"], KEY_ERROR_CHOICES),
            headers=_header_style(name("headers"), v["headers"]),
            legacy_headers=bool(v["legacy_headers"]),
            proxy_count=proxies,
            ipv6_subnet=v["ipv6_subnet"],
            shadow=bool(v["shadow"]),
            refusal=refusal,
            store_failure_header=header,
            skip=v["skip"],
            allow_list=v["allow_list"],
            deny_list=v["deny_list"],
            block_duration=block,
        )
        for option in ("application", "default"):  # a bad policy fails here, at start-up
            policy = getattr(options, option)
            if policy is not None:
                try:
                    Limiter(policy, "memory://", algorithm=options.algorithm)
                except InvalidArgumentError as error:
                    raise InvalidArgumentError(f"{name(option)}: {error}") from None
        return options


def address_of(peer: Optional[str], forwarded: Sequence[str], proxy_count: int, ipv6_subnet: int) -> str:
    """The client address key: ``peer``, or with ``proxy_count = N`` proxies the Nth X-Forwarded-For value from the
    right (what the outermost proxy saw, which a client cannot forge); a request that did not cross N proxies keeps
    the peer. ``forwarded``: the X-Forwarded-For field lines. IPv6 masked to ``ipv6_subnet`` bits."""
    address = peer or ""
    if proxy_count:
        hops = [v.strip() for v in ",".join(forwarded).split(",") if v.strip()]
        if len(hops) >= proxy_count:
            address = hops[-proxy_count]
    if ":" not in address:  # IPv4 (or no address at all): as is, without a call
        return address
    return client_key(address, ipv6_subnet)


def address_reader(options: Options, peer: Callable[[Any], Optional[str]],
                   forwarded: Callable[[Any], Sequence[str]]) -> Callable[[Any], str]:
    """The client address key of a request as ``options`` say (``address_of``), from the adapter's readers of its
    peer address and of its X-Forwarded-For field lines (read only behind proxies)."""
    proxies, subnet = options.proxy_count, options.ipv6_subnet
    if proxies:
        return lambda req: address_of(peer(req), forwarded(req), proxies, subnet)

    def key(req: Any) -> str:
        address = peer(req) or ""
        return address if ":" not in address else client_key(address, subnet)

    return key


def wrapped_chain(f: Any) -> List[Any]:
    """``f`` and what it wraps (functools.wraps sets ``__wrapped__``): a decorator above ``@limit`` hides nothing."""
    out = []
    while f is not None and len(out) < 100:
        out.append(f)
        f = getattr(f, "__wrapped__", None)
    return out


def key_text(value: Any) -> Union[str, bytes]:
    """What a key function returned, as a key: a str or bytes as is, an int (not a bool) in decimal, any object
    whose class defines its own ``__str__`` (a UUID, an IP address) as that; else a TypeError saying why."""
    if isinstance(value, (str, bytes)):
        if not value:
            raise ValueError("the key function returned an empty key")
        return value
    if isinstance(value, bool) or value is None:
        raise TypeError(f"the key function returned {value!r}, which names no client")
    if isinstance(value, int):
        return str(value)
    if type(value).__str__ is not object.__str__:
        text = str(value)
        if text:
            return text
    raise TypeError(f"the key function returned a {type(value).__name__}, which has no clear text form: return a "
                    "str, bytes, int, or an object with its own __str__")


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


@dataclass(eq=False)
class LimitSpec:
    """One limit as declared (a decorator, a dependency, the default or app-wide limit); bound to a store later."""

    policy: str
    key: Any  # None: the adapter's default key; a KeyPart; or a function of the request (the adapter's form)
    scope: Optional[str]  # a shared limit's scope; None: the limit counts on its own
    name: Optional[str]  # its name in the fields; None: the route's
    cost: Union[int, Callable[..., int]] = 1
    methods: Optional[FrozenSet[str]] = None
    algorithm: Optional[str] = None
    burst: Optional[int] = None
    on_store_error: Optional[str] = None
    shadow: Optional[bool] = None
    count_when: Optional[Callable[[int], bool]] = None  # of the response's status: false refunds the request

    @staticmethod
    def make(
        policy: str,
        *,
        key: Any = None,
        scope: Optional[str] = None,
        name: Optional[str] = None,
        cost: Union[int, Callable[..., int]] = 1,
        methods: Optional[Iterable[str]] = None,
        algorithm: Optional[str] = None,
        burst: Optional[int] = None,
        on_store_error: Optional[str] = None,
        shadow: Optional[bool] = None,
        count_when: Optional[Callable[[int], bool]] = None,
    ) -> "LimitSpec":
        """A spec, checked where it is written (import time), not on the first request."""
        Limiter(policy, "memory://", algorithm=algorithm or "fixed_window", burst=burst)
        if on_store_error is not None:
            _choice("on_store_error", on_store_error, STORE_ERROR_CHOICES)
        for text in (scope, name):
            if text is not None:
                sf_string(text)
        if key is not None and not isinstance(key, KeyPart) and not callable(key):
            raise TypeError(f"key must be a function or a ratewarden.keys part, got {key!r}")
        if isinstance(methods, str):
            methods = [methods]
        count_when = COUNT_WHEN.get(count_when, count_when) if isinstance(count_when, str) else count_when
        if count_when is not None and not callable(count_when):
            raise TypeError(f"count_when must be 'failure', 'success' or a function of the response's status code, "
                            f"got {count_when!r}")
        return LimitSpec(policy, key, scope, name, cost,
                         frozenset(m.upper() for m in methods) if methods is not None else None,
                         algorithm, burst, on_store_error, shadow, count_when)


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


# Steps: a generator that yields what it needs done and is sent the result (or thrown the error). A step is a
# store call (sync function, async function or None where the sync one answers at once, arguments) or an awaitable
# of the user's to await (AWAIT, None, awaitable), which only steps made for ``arun`` yield.
Steps = Generator[Tuple[Any, Any, Any], Any, Any]
AWAIT: Any = None


def run(steps: Steps) -> Any:
    """Drives ``steps`` with synchronous calls; their value."""
    try:
        step = next(steps)
        while True:
            try:
                result = step[0](*step[2])
            except Exception as error:
                step = steps.throw(error)
            else:
                step = steps.send(result)
    except StopIteration as stop:
        return stop.value


async def arun(steps: Steps) -> Any:
    """Drives ``steps`` on the event loop: a store call through its async function (the sync one when that
    answers at once), a user's awaitable awaited."""
    try:
        step = next(steps)
        while True:
            try:
                call = step[1]
                if step[0] is AWAIT:
                    result = await step[2]
                elif call is None:
                    result = step[0](*step[2])
                else:
                    result = await call(*step[2])
            except Exception as error:
                step = steps.throw(error)
            else:
                step = steps.send(result)
    except StopIteration as stop:
        return stop.value


def _fail_closed(limiter: Limiter) -> Decision:
    """The refusal of a store failure when failing closed: retry in 1 s, or the shortest period if shorter."""
    wait = min([1_000_000, *(p.period_us for p in limiter.policies)])
    first = limiter.policies[0]
    return Decision(allowed=False, limit=first.limit, remaining=0, reset_after_us=wait, retry_after_us=wait, used=0)


class Gate:
    """One app's limits: its options, its bound limiters, and the check of a request. ``access`` reads the adapter's
    requests: ``address_key(options)`` gives the address key function, ``header(req, name)``, ``user(req)``,
    ``form(req, name)``; ``call(func)`` turns a user's function (key, cost, skip) into a function of the request."""

    def __init__(self, options: Options, access: Any) -> None:
        self.options = options
        self.access = access
        self.address_key = access.address_key(options)
        self.skip = access.call(options.skip) if options.skip is not None else None
        self.failure_log = ThrottledLog()
        self._limiters: Dict[int, Limiter] = {}  # by id() of a LimitSpec, which the adapter's registry keeps
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

    # --- binding -------------------------------------------------------------------------------------------------

    def limiter(self, spec: LimitSpec) -> Limiter:
        limiter = self._limiters.get(id(spec))
        if limiter is None:
            with self._lock:
                limiter = self._limiters.get(id(spec))
                if limiter is None:
                    # "raise": the layer applies on_store_error itself, so that it knows the store failed (to log it,
                    # say so in a field, and not show a quota nobody computed).
                    limiter = self._limiters[id(spec)] = Limiter(
                        spec.policy, self.options.store, algorithm=spec.algorithm or self.options.algorithm,
                        burst=spec.burst, prefix=self.options.prefix, on_store_error="raise")
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
        limiters = [self.limiter(s) for s in specs]
        names = iter(_distinct([s.name or route_name for s, l in zip(specs, limiters) for _ in l.policies]))
        checks: List[Check] = []
        quotas: List[List[Quota]] = []  # per limit, one per policy in its order: what decision.policy_index indexes
        own: Counter[str] = Counter()
        for spec, limiter, rid in zip(specs, limiters, ids):
            if spec.count_when is not None:
                self.settles = True
            quotas.append([Quota(next(names), p.limit, p.period_us) for p in limiter.policies])
            if spec.scope is not None:
                prefix = f"{spec.scope}:"
            else:
                own[rid] += 1
                prefix = f"{rid}:" if own[rid] == 1 else f"{rid}#{own[rid]}:"
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

    def merge(self, routes: Sequence[Route]) -> Route:
        """One route of the limits of several, in order."""
        checks = [c for r in routes for c in r.checks]
        names = [n for r in routes for n in r.names]
        quotas = [[Quota(n, p.limit, p.period_us) for n, p in zip(ns, c.limiter.policies)]
                  for ns, c in zip(names, checks)]
        return Route(checks, Fields(quotas, self.options.headers, self.options.legacy_headers), names,
                     any(r.needs_form for r in routes), all(r.sync for r in routes))

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
                key = check.prefix + raw if raw.__class__ is str and raw else _prefixed(check.prefix, raw)
                cost = check.cost
                if cost.__class__ is not int:
                    cost = cost(req)
                    if awaits and inspect.isawaitable(cost):
                        cost = yield AWAIT, None, cost
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
            except Exception as error:  # no key, or one the store cannot hold (too long)
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
        if o.allow_list is not None and (yield o.allow_list.contains, o.allow_list.acontains, (_key_bytes(raw),)):
            return "allow"
        if o.deny_list is not None and (yield o.deny_list.contains, o.deny_list.acontains, (_key_bytes(raw),)):
            return "deny"
        if self.blocked is None:
            return None
        return (yield self.blocked.expires_in, self.blocked.aexpires_in, (key,)) or None

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
        self.failure_log(logging.ERROR, "store", "ratewarden: the store failed (%s), rate limit %s %s: %s",
                         error.code, check.spec.policy,
                         {"allow": "skipped (fail open)", "deny": "refused (fail closed)"}.get(mode, "raised"),
                         error)
        if mode == "raise":
            raise error
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

    # --- counting only what matters ---

    def settle(self, checked: Checked, status: int) -> None:
        """After the response: gives back the hits of limits whose ``count_when(status)`` is false (e.g. a login
        limit that counts only failures: ``count_when=lambda status: status >= 400``). A store failure is logged."""
        run(self._refunds(checked, status))

    async def asettle(self, checked: Checked, status: int) -> None:
        """``settle`` for asyncio."""
        await arun(self._refunds(checked, status))

    def _refunds(self, checked: Checked, status: int) -> Steps:
        for check, key, cost in checked.charged or ():
            if not check.count_when(status):  # type: ignore[misc]
                try:
                    yield check.limiter.refund, check.limiter.arefund, (key, cost)
                except StoreError as error:
                    self._refund_failed(check, error)

    def _refund_failed(self, check: Check, error: StoreError) -> None:
        with self._lock:
            self.counts["store_failures"] += 1
        self.failure_log(logging.ERROR, "store", "ratewarden: the store failed (%s), rate limit %s kept a hit its "
                         "count_when did not count: %s", error.code, check.spec.policy, error)

    # --- answering -----------------------------------------------------------------------------------------------

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


def _charge(checked: Checked, check: Check, key: Union[str, bytes], cost: int) -> None:
    if checked.charged is None:
        checked.charged = []
    checked.charged.append((check, key, cost))


def _prefixed(prefix: str, raw: Any) -> Union[str, bytes]:
    key = key_text(raw)
    return prefix + key if isinstance(key, str) else prefix.encode() + key


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


def _exhausted(limit: int, wait_us: int) -> Decision:
    """A refusal with nothing left for `wait_us`: a blocked client's, a deny-listed one's."""
    return Decision(allowed=False, limit=limit, remaining=0, reset_after_us=wait_us, retry_after_us=wait_us, used=limit)


def _key_bytes(raw: Any) -> Union[str, bytes]:
    """A client key as the lists take it: what key_text made of the key function's value."""
    return raw if isinstance(raw, (str, bytes)) else key_text(raw)
