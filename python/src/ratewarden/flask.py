"""ratewarden.flask: rate limits for Flask routes, in the style of Flask-Limiter.

    limiter = RateLimiter(app, default="200/minute", store="redis://127.0.0.1:6379")

    @app.post("/login")
    @limiter.limit("5/minute", key=lambda: request.form["username"])
    def login(): ...

A refused request gets the answer of :class:`RateLimitExceeded` (a ``werkzeug.exceptions.TooManyRequests``): 429, a
short text body and ``Retry-After`` in whole seconds, rounded up. The exception is raised when the app has an error
handler that takes it; otherwise the same answer is made without it. Limited responses carry ``RateLimit-Policy`` and ``RateLimit``
(IETF draft, Structured Field lists) and, with ``RATEWARDEN_LEGACY_HEADERS``, ``X-RateLimit-Limit/-Remaining/-Reset``:
the fields come from ratewarden._headers, shared in form with Node's Express middleware. The configuration keys and
the defaults are in docs/python.md.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Tuple, TypeVar, Union

from flask import Flask, Request, Response, current_app, request
from werkzeug.exceptions import BadRequest, TooManyRequests

from ._client_key import DEFAULT_IPV6_SUBNET, check_ipv6_subnet, client_key
from ._errors import InvalidArgumentError
from ._headers import STYLES, Fields, Quota, ceil_seconds, sf_string
from ._limiter import Limiter, open_store
from ._native import Decision, Store

__all__ = ["RateLimitExceeded", "RateLimitKeyError", "RateLimiter", "client_address"]

KeyFunc = Callable[[], Union[str, bytes]]
F = TypeVar("F", bound=Callable[..., Any])

log = logging.getLogger("ratewarden.flask")

STORE_ERROR_CHOICES = ("allow", "deny", "raise")
KEY_ERROR_CHOICES = ("reject", "skip", "raise")


def client_address() -> str:
    """The client's IP address: the key function used when none is given.

    With ``RATEWARDEN_PROXY_COUNT = N`` (the number of reverse proxies in front of the app, each appending to
    X-Forwarded-For), it is the address the outermost of them saw: the Nth X-Forwarded-For value from the right,
    which a client cannot forge; a request that did not cross N proxies uses the peer address. IPv6 addresses are
    reduced to their network of ``RATEWARDEN_IPV6_SUBNET`` bits (default 56, which one client usually owns whole),
    IPv4-mapped ones to their IPv4 address.
    """
    return _address_of(request._get_current_object(), current_app.config)


def _address_of(req: Request, config: Dict[str, Any]) -> str:
    address = req.remote_addr or ""
    proxies = config.get("RATEWARDEN_PROXY_COUNT", 0)
    if proxies:
        hops = [v.strip() for v in ",".join(req.headers.getlist("X-Forwarded-For")).split(",") if v.strip()]
        if len(hops) >= proxies:
            address = hops[-proxies]
    if ":" not in address:  # IPv4 (or no address at all): the key as is, without a call
        return address
    return client_key(address, config.get("RATEWARDEN_IPV6_SUBNET", DEFAULT_IPV6_SUBNET))


def _store_key(prefix: str, key: Any) -> Union[str, bytes]:
    """``prefix + key`` for the store, from what a key function returned: a non-empty str or bytes."""
    if isinstance(key, str):
        if key:
            return prefix + key
    elif isinstance(key, bytes):
        if key:
            return prefix.encode() + key
    else:
        raise TypeError(f"the key function returned {type(key).__name__}, not str or bytes")
    raise ValueError("the key function returned an empty key")


def _refusal_description(policy: str, retry_after_s: int) -> str:
    return f"{policy} exceeded; retry in {retry_after_s} s"


class RateLimitExceeded(TooManyRequests):
    """429 Too Many Requests with ``Retry-After``; register an error handler for it (or for 429) to customise.

    ``decision`` is the core's refusal (with ``on_store_error="deny"``, also when the store failed); ``policy`` is the
    refused limit's policy string.
    """

    def __init__(self, policy: str, decision: Decision, retry_after_s: int) -> None:
        super().__init__(description=_refusal_description(policy, retry_after_s), retry_after=retry_after_s)
        self.policy = policy
        self.decision = decision

    def get_body(self, environ: Any = None, scope: Any = None) -> str:
        return f"{self.code} {self.name}: {self.description}\n"

    def get_headers(self, environ: Any = None, scope: Any = None) -> List[Tuple[str, str]]:
        headers = [(k, v) for k, v in super().get_headers(environ, scope) if k.lower() != "content-type"]
        return [("Content-Type", "text/plain; charset=utf-8"), *headers]


class RateLimitKeyError(BadRequest):
    """400: the key function of a limit failed (``RATEWARDEN_ON_KEY_ERROR = "reject"``, the default)."""

    def get_body(self, environ: Any = None, scope: Any = None) -> str:
        return f"{self.code} {self.name}: {self.description}\n"

    def get_headers(self, environ: Any = None, scope: Any = None) -> List[Tuple[str, str]]:
        return [("Content-Type", "text/plain; charset=utf-8")]


@dataclass(eq=False)
class _LimitSpec:
    """One ``@limit`` as declared; bound to an app's store later."""

    policy: str
    key: Optional[KeyFunc]
    scope: Optional[str]  # shared limits: the scope every route shares; None: each route counts apart
    name: Optional[str]  # the policy name in the headers; None: the endpoint
    cost: Union[int, Callable[[], int]]
    methods: Optional[FrozenSet[str]]
    algorithm: Optional[str]
    burst: Optional[int]
    on_store_error: Optional[str]


@dataclass(eq=False)
class _Check:
    """A limit bound to one app and one endpoint, with what a request needs of it resolved once."""

    spec: _LimitSpec
    hit: Callable[[Union[str, bytes], int], Decision]  # the bound core limiter's
    key: Optional[KeyFunc]  # None: client_address, read straight from the request
    prefix: str  # "<scope>:", the scope being the endpoint unless the limit is shared
    cost: Union[int, Callable[[], int]]
    methods: Optional[FrozenSet[str]]


@dataclass(eq=False)
class _Route:
    """The limits of one endpoint, and the fields their decisions give (texts built once per route)."""

    checks: List[_Check]
    fields: Fields


@dataclass(eq=False)
class _AppState:
    """What init_app resolved for one app."""

    enabled: bool
    store: Store
    default: Optional[str]
    algorithm: str
    prefix: Optional[str]
    on_store_error: str
    on_key_error: str
    headers: Optional[str]  # one of STYLES, or None
    legacy_headers: bool
    default_key: KeyFunc
    default_spec: Optional[_LimitSpec] = None
    custom_errors: bool = False  # the app's class changes how Flask handles HTTP exceptions
    routes: Dict[str, _Route] = field(default_factory=dict)
    limiters: Dict[int, Limiter] = field(default_factory=dict)  # by id() of a _LimitSpec, which the registry keeps


def _qualified_name(f: Callable[..., Any]) -> str:
    # functools.wraps copies both, so a decorator applied above @limit still finds the limits.
    return f"{getattr(f, '__module__', '')}.{getattr(f, '__qualname__', repr(f))}"


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


def _choice(name: str, value: str, choices: Iterable[str]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def _header_style(value: Union[bool, str]) -> Optional[str]:
    """RATEWARDEN_HEADERS: a style, or a truth value as before styles existed (true: the newest draft's form)."""
    if not isinstance(value, str):
        return "draft-8" if value else None
    return _choice("RATEWARDEN_HEADERS", value, STYLES)


class RateLimiter:
    """The Flask extension. ``RateLimiter(app)`` or ``RateLimiter()`` then ``init_app(app)``.

    Arguments are defaults that the app's ``RATEWARDEN_*`` configuration overrides: ``store`` (a URL, default
    ``"memory://"``, or a ``Store``), ``default`` (a policy applied to every route without its own limits, each
    route counted apart), ``key`` (the key function, default :func:`client_address`), ``algorithm``, ``prefix``,
    ``on_store_error`` (``"allow"`` = fail open, the default; ``"deny"`` = fail closed; ``"raise"``: passed to the
    core's Limiter), ``on_key_error`` (``"reject"`` = 400, the default; ``"skip"`` the limit; ``"raise"``),
    ``headers`` (``"draft-8"`` or True, the default; ``"draft-7"``, ``"draft-6"``; False for none),
    ``legacy_headers`` (X-RateLimit-*, default off), ``ipv6_subnet`` (the prefix length of IPv6 client keys,
    default 56).
    """

    def __init__(
        self,
        app: Optional[Flask] = None,
        *,
        key: KeyFunc = client_address,
        default: Optional[str] = None,
        store: Union[str, Store] = "memory://",
        algorithm: str = "fixed_window",
        prefix: Optional[str] = None,
        on_store_error: str = "allow",
        on_key_error: str = "reject",
        headers: Union[bool, str] = True,
        legacy_headers: bool = False,
        ipv6_subnet: int = DEFAULT_IPV6_SUBNET,
    ) -> None:
        self._defaults: Dict[str, Any] = {
            "RATEWARDEN_ENABLED": True,
            "RATEWARDEN_STORE": store,
            "RATEWARDEN_DEFAULT": default,
            "RATEWARDEN_ALGORITHM": algorithm,
            "RATEWARDEN_PREFIX": prefix,
            "RATEWARDEN_ON_STORE_ERROR": on_store_error,
            "RATEWARDEN_ON_KEY_ERROR": on_key_error,
            "RATEWARDEN_HEADERS": headers,
            "RATEWARDEN_LEGACY_HEADERS": legacy_headers,
            "RATEWARDEN_PROXY_COUNT": 0,
            "RATEWARDEN_IPV6_SUBNET": ipv6_subnet,
        }
        self._key = key
        self._limits: Dict[str, List[_LimitSpec]] = {}  # by the view's qualified name, in declaration order
        self._exempt: set[str] = set()
        self._states: List[_AppState] = []
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Reads the app's RATEWARDEN_* configuration, opens the store and installs the request hooks."""
        config = app.config
        for name, value in self._defaults.items():
            config.setdefault(name, value)
        check_ipv6_subnet("RATEWARDEN_IPV6_SUBNET", config["RATEWARDEN_IPV6_SUBNET"])
        store = config["RATEWARDEN_STORE"]
        state = _AppState(
            enabled=bool(config["RATEWARDEN_ENABLED"]),
            store=store if isinstance(store, Store) else open_store(store),
            default=config["RATEWARDEN_DEFAULT"],
            algorithm=config["RATEWARDEN_ALGORITHM"],
            prefix=config["RATEWARDEN_PREFIX"],
            on_store_error=_choice(
                "RATEWARDEN_ON_STORE_ERROR", config["RATEWARDEN_ON_STORE_ERROR"], STORE_ERROR_CHOICES
            ),
            on_key_error=_choice("RATEWARDEN_ON_KEY_ERROR", config["RATEWARDEN_ON_KEY_ERROR"], KEY_ERROR_CHOICES),
            headers=_header_style(config["RATEWARDEN_HEADERS"]),
            legacy_headers=bool(config["RATEWARDEN_LEGACY_HEADERS"]),
            default_key=self._key,
        )
        if state.default:
            state.default_spec = self._spec(state.default, None, None, "default", 1, None, state.algorithm, None, None)
        # A Flask subclass that changes how HTTP exceptions are handled gets every refusal as the exception.
        state.custom_errors = any(getattr(type(app), m) is not getattr(Flask, m) for m in _ERROR_HANDLING)
        self._states.append(state)
        app.extensions["ratewarden"] = self
        app.before_request(lambda: self._check(app, state))
        app.after_request(self._add_headers)

    def limit(
        self,
        policy: str,
        *,
        key: Optional[KeyFunc] = None,
        cost: Union[int, Callable[[], int]] = 1,
        methods: Optional[Iterable[str]] = None,
        algorithm: Optional[str] = None,
        burst: Optional[int] = None,
        on_store_error: Optional[str] = None,
        scope: Optional[str] = None,
    ) -> Callable[[F], F]:
        """Decorator: limits a view to ``policy`` (``"5/minute"``, ``"10/second; 100/hour"``) per ``key()``.

        Several ``@limit`` on one view all apply, top to bottom; the first refusal stops (the limits checked before
        it stay charged). ``cost`` is an int or a function of the request; ``methods`` restricts the limit to those
        HTTP methods; ``scope`` makes it shared (see :meth:`shared_limit`).
        """
        spec = self._spec(policy, key, scope, scope, cost, methods, algorithm, burst, on_store_error)

        def decorator(f: F) -> F:
            # Decorators run bottom-up: inserting first keeps the declaration order.
            self._limits.setdefault(_qualified_name(f), []).insert(0, spec)
            self._forget_routes()
            return f

        return decorator

    def shared_limit(
        self,
        policy: str,
        scope: str,
        *,
        key: Optional[KeyFunc] = None,
        cost: Union[int, Callable[[], int]] = 1,
        methods: Optional[Iterable[str]] = None,
        on_store_error: Optional[str] = None,
    ) -> Callable[[F], F]:
        """Decorator: one limit for every view that uses the same ``scope`` (one count per key for all of them;
        ``scope`` is also the policy's name in the headers)."""
        return self.limit(policy, key=key, cost=cost, methods=methods, on_store_error=on_store_error, scope=scope)

    def exempt(self, f: F) -> F:
        """Decorator: the view has no limits at all, not even the default one."""
        self._exempt.add(_qualified_name(f))
        self._forget_routes()
        return f

    def _spec(
        self,
        policy: str,
        key: Optional[KeyFunc],
        scope: Optional[str],
        name: Optional[str],
        cost: Union[int, Callable[[], int]],
        methods: Optional[Iterable[str]],
        algorithm: Optional[str],
        burst: Optional[int],
        on_store_error: Optional[str],
    ) -> _LimitSpec:
        # Bad arguments fail at import time, where the decorator is written, not on the first request.
        Limiter(policy, "memory://", algorithm=algorithm or "fixed_window", burst=burst,
                on_store_error=on_store_error or "raise")
        if scope is not None:
            sf_string(scope)
        return _LimitSpec(
            policy,
            key,
            scope,
            name,
            cost,
            frozenset(m.upper() for m in methods) if methods is not None else None,
            algorithm,
            burst,
            on_store_error,
        )

    def _forget_routes(self) -> None:
        for state in self._states:
            state.routes.clear()

    def _route(self, app: Flask, state: _AppState, endpoint: str) -> _Route:
        """The limits of ``endpoint`` bound to the app's store, and their fields (cached per endpoint)."""
        view = app.view_functions.get(endpoint)
        specs: List[_LimitSpec] = []
        if view is not None and _qualified_name(view) not in self._exempt:
            specs = self._limits.get(_qualified_name(view)) or ([state.default_spec] if state.default_spec else [])
        limiters = [self._bind(state, spec) for spec in specs]
        names = iter(_distinct([spec.name or endpoint for spec, l in zip(specs, limiters) for _ in l.policies]))
        checks: List[_Check] = []
        quotas: List[List[Quota]] = []  # per limit, one per policy in its order: what decision.policy_index indexes
        for spec, limiter in zip(specs, limiters):
            quotas.append([Quota(next(names), p.limit, p.period_us) for p in limiter.policies])
            key = spec.key or state.default_key
            key_func = None if key is client_address else key
            checks.append(_Check(spec, limiter.hit, key_func, f"{spec.scope or endpoint}:", spec.cost, spec.methods))
        # Fields checks every name: an endpoint name that no header can carry fails here, not in every response.
        route = state.routes[endpoint] = _Route(checks, Fields(quotas, state.headers, state.legacy_headers))
        return route

    @staticmethod
    def _bind(state: _AppState, spec: _LimitSpec) -> Limiter:
        limiter = state.limiters.get(id(spec))
        if limiter is None:
            limiter = state.limiters[id(spec)] = Limiter(
                spec.policy,
                state.store,
                algorithm=spec.algorithm or state.algorithm,
                burst=spec.burst,
                prefix=state.prefix,
                on_store_error=spec.on_store_error or state.on_store_error,  # the core decides what a failure gives
            )
        return limiter

    def _check(self, app: Flask, state: _AppState) -> Optional[Response]:
        """before_request: hits the route's limits; a refusal is answered here (see _refuse). This and _add_headers
        run on every request: what does not depend on the request was resolved once per route (_route)."""
        if not state.enabled:
            return None
        req = request._get_current_object()
        endpoint = req.endpoint
        if endpoint is None:
            return None
        route = state.routes.get(endpoint) or self._route(app, state, endpoint)
        checks = route.checks
        if not checks:
            return None
        decisions: List[Optional[Decision]] = [None] * len(checks)
        req._ratewarden = (route, decisions)  # type: ignore[attr-defined]  # for _add_headers
        for i, check in enumerate(checks):
            if check.methods is not None and req.method not in check.methods:
                continue
            try:
                key = _address_of(req, app.config) if check.key is None else check.key()
                key = check.prefix + key if key.__class__ is str and key else _store_key(check.prefix, key)
            except Exception as error:
                self._key_failed(state, check, error)
                continue
            cost = check.cost
            # A store failure is the core's to answer (on_store_error): a decision, or StoreError with "raise".
            try:
                decision = check.hit(key, cost() if callable(cost) else cost)
            except InvalidArgumentError as error:  # a key from the request that the store cannot hold (too long)
                self._key_failed(state, check, error)
                continue
            decisions[i] = decision
            if not decision.allowed:
                return self._refuse(app, state, req, check, decision)
        return None

    @staticmethod
    def _key_failed(state: _AppState, check: _Check, error: Exception) -> None:
        """Applies on_key_error: returns when the limit is skipped, else raises."""
        if state.on_key_error == "raise":
            raise error
        if state.on_key_error == "skip":
            log.warning("rate limit %s skipped: no usable key (%s)", check.spec.policy, error)
            return
        raise RateLimitKeyError("the rate limit key could not be determined") from error

    @staticmethod
    def _refuse(app: Flask, state: _AppState, req: Request, check: _Check, decision: Decision) -> Response:
        """The 429 of a refusal. RateLimitExceeded is raised when the app would do anything with it but turn it into
        its default response (an error handler takes it, TRAP_HTTP_EXCEPTIONS, a Flask subclass); otherwise that
        response is made here, the same one with its fields, without Flask's exception handling (raise, handler
        lookup, the exception run as a WSGI app): then a refusal costs about what an allowed request does."""
        retry_after_s = ceil_seconds(decision.retry_after_us)
        policy = check.spec.policy
        if state.custom_errors or app.config["TRAP_HTTP_EXCEPTIONS"] or _has_refusal_handler(app, req.blueprints):
            raise RateLimitExceeded(policy, decision, retry_after_s)
        route, decisions = req.__dict__.pop("_ratewarden")  # the fields go in now: nothing left for _add_headers
        return app.response_class(
            f"429 Too Many Requests: {_refusal_description(policy, retry_after_s)}\n",
            429,
            [("Content-Type", "text/plain; charset=utf-8"), *_fields(route, decisions)],
        )

    @staticmethod
    def _add_headers(response: Response) -> Response:
        """after_request: the rate-limit fields of the limits the request met (also on an error handler's response).
        An app's own 429 handler keeps its Retry-After; any other field the response has is replaced."""
        checked: Optional[Tuple[_Route, List[Optional[Decision]]]] = getattr(
            request._get_current_object(), "_ratewarden", None
        )
        if checked is None:
            return response
        fields = _fields(*checked)
        if fields:
            headers = response.headers
            present = {name.lower() for name, _ in headers}
            for name, value in fields:
                if name.lower() not in present:
                    headers.add(name, value)  # werkzeug's set would search the headers for it once more
                elif name != "Retry-After":
                    headers.set(name, value)
        return response


def _fields(route: _Route, decisions: List[Optional[Decision]]) -> List[Tuple[str, str]]:
    return route.fields(decisions, time.time_ns() // 1000 if route.fields.legacy else 0)


# What a Flask subclass may override to handle HTTP exceptions its own way (see RateLimiter._refuse).
_ERROR_HANDLING = ("handle_user_exception", "handle_http_exception", "trap_http_exception", "_find_error_handler")
_REFUSAL_CLASSES = RateLimitExceeded.__mro__


def _has_refusal_handler(app: Flask, blueprints: List[str]) -> bool:
    """Whether an error handler of the app, or of a blueprint the request is in, takes a RateLimitExceeded: one
    registered for 429 or for any of its classes (Flask's lookup, without its order: only whether one exists)."""
    spec = app.error_handler_spec
    for name in (*blueprints, None):
        by_code = spec.get(name)
        if by_code:
            for code in (429, None):
                handlers = by_code.get(code)
                if handlers and any(c in handlers for c in _REFUSAL_CLASSES):
                    return True
    return False
