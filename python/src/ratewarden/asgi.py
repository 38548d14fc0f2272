"""ratewarden.asgi: rate limits for Starlette and FastAPI, fully asynchronous (every store call is ``Limiter.ahit``:
the event loop never waits on the store).

    limiter = RateLimiter(app, application="1000/minute", store="redis://127.0.0.1:6379")

    @app.post("/login")
    @limiter.limit("5/minute", key=keys.form("username"))      # FastAPI or Starlette endpoints alike
    async def login(): ...

    router = APIRouter(dependencies=[limiter.depends("100/minute")])   # FastAPI: a dependency, e.g. per router

``RateLimiter(app)`` (or ``init_app(app)``) installs :class:`RateLimitMiddleware`: on the first request it wraps
each app route that has limits (its own, else the default one, and the app-wide one unless exempt) so that they are
checked once the router has found the route, and it writes the fields of every limit a request met. The options are
those of every adapter (docs/python.md).
"""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Awaitable, Callable, Dict, List, MutableMapping, Optional, Tuple, TypeVar, Union

from starlette import requests as starlette_requests, routing
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Host, Mount

from ._errors import StoreError
from ._http import (RATE_LIMIT_FIELDS, Checked, Gate, LimitSpec, Options, Refusal, Route, address_reader,
                    key_rejection, wrapped_chain)
from ._native import Decision
from ._route_name import route_name
from .keys import KeyPart

__all__ = ["RateLimitExceeded", "RateLimitKeyError", "RateLimitMiddleware", "RateLimiter"]

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]
KeyFunc = Callable[[Request], Any]
F = TypeVar("F", bound=Callable[..., Any])

_SCOPE_KEY = "ratewarden"  # scope[_SCOPE_KEY]: the (gate, checked) of each check made on the request


class RateLimitExceeded(HTTPException):
    """Raised by a route limit that refuses (the middleware's exception handler answers it); ``refusal`` holds the
    decision, the refused policy, the body."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.status, refusal.body.decode(),
                         {"Retry-After": str(refusal.retry_after)} if refusal.status == 429 else None)
        self.refusal = refusal


class RateLimitKeyError(HTTPException):
    """400: a route limit could make no key (``on_key_error = "reject"``)."""

    def __init__(self) -> None:
        status, body, _ = key_rejection("")
        super().__init__(status, body.decode())


class _Access:
    """How the HTTP layer reads a Starlette ``Request``; a user's functions take the request (and may be async)."""

    @staticmethod
    def address_key(options: Options) -> Callable[[Request], str]:
        address = _scope_address(options)

        def key(req: Request) -> str:
            return address(req.scope)

        return key

    @staticmethod
    def header(req: Request, name: str) -> Optional[str]:
        return req.headers.get(name)

    @staticmethod
    def user(req: Request) -> Any:
        user = req.scope.get("user")
        if user is None or not getattr(user, "is_authenticated", False):
            return None
        try:
            return user.identity
        except NotImplementedError:
            return user.display_name

    @staticmethod
    def form(req: Request, name: str) -> Optional[str]:
        form = req.scope.get("ratewarden.form")  # read (awaited) before the check; see RateLimiter._route_check
        value = form.get(name) if form is not None else None
        return value if isinstance(value, str) else None

    @staticmethod
    def call(func: Callable[[Request], Any]) -> Callable[[Request], Any]:
        return func


class RateLimiter:
    """The options and limits of one app. ``RateLimiter(app, **options)``, or ``RateLimiter(**options)`` then
    ``init_app(app)``; ``key`` is the default key (a function of the request, maybe async, or a ``keys`` part)."""

    def __init__(self, app: Any = None, *, key: Union[KeyFunc, KeyPart, None] = None, **options: Any) -> None:
        self.options = Options.read(options, lambda name: name)
        self.gate = Gate(self.options, _Access)
        _require_form_parser(key)
        self.key = key
        self._limits: Dict[Any, List[LimitSpec]] = {}  # by endpoint, in declaration order
        self._exempt: set = set()
        self._dependencies: set = set()  # the functions of depends(): a route with one has limits of its own
        # By id() of an app's router: each router install met in it, and its number of routes then.
        self._watched: Dict[int, List[Tuple[Any, int]]] = {}
        self._apps: List[Any] = []
        self._lock = threading.Lock()
        # Whether the middleware must add the fields to what the app's exception middleware answers: a limited
        # request it may answer (see _answers_errors), and a 404 counted by the app-wide limit. Else each limited
        # route adds them to its own answers and the middleware only installs.
        self.outer_fields = False
        self.scope_address = _scope_address(self.options)  # the client address, for a plain route's short path
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Any) -> None:
        """Installs the middleware on a Starlette or FastAPI app (and, once depends() is used, the exception handlers
        of its refusals)."""
        app.add_middleware(RateLimitMiddleware, limiter=self)
        self._apps.append(app)
        if self._dependencies:
            self._add_handlers(app)

    def _add_handlers(self, app: Any) -> None:
        app.add_exception_handler(RateLimitExceeded, self._refusal_response)
        app.add_exception_handler(RateLimitKeyError, _key_error_response)

    def stats(self) -> Dict[str, int]:
        """``refused``, ``shadow_refused``, ``store_failures``, ``key_failures``, ``allow_listed``, ``deny_listed``,
        ``blocked`` since start, in this process."""
        return self.gate.stats()

    # --- route limits ----------------------------------------------------------------------------------------------

    def limit(self, policy: str, **kw: Any) -> Callable[[F], F]:
        """Decorator of an endpoint (Starlette or FastAPI, either side of the route decorator): ``policy`` per key.
        Keywords: ``key``, ``cost``, ``methods``, ``algorithm``, ``burst``, ``on_store_error``, ``scope``,
        ``shadow``, ``count_when`` (as Flask's ``limit``). The endpoint is unchanged: the middleware checks its limits once the
        router has found its route (no FastAPI dependency to solve, no wrapper). Several all apply, top to bottom."""
        _require_form_parser(kw.get("key"))
        spec = LimitSpec.make(policy, name=kw.get("scope"), **kw)

        def decorator(endpoint: F) -> F:
            self._limits.setdefault(endpoint, []).insert(0, spec)  # decorators run bottom-up
            return endpoint

        return decorator

    def shared_limit(self, policy: str, scope: str, **kw: Any) -> Callable[[F], F]:
        """:meth:`limit` counted once for every endpoint with the same ``scope``."""
        return self.limit(policy, scope=scope, **kw)

    def exempt(self, endpoint: F) -> F:
        """Decorator: the endpoint has no app-wide or default limit."""
        self._exempt.add(endpoint)
        return endpoint

    def depends(self, policy: str, **kw: Any) -> Any:
        """A FastAPI dependency, for a router's or a route's ``dependencies=[limiter.depends("5/minute")]``
        (keywords as :meth:`limit`). Each route it is on counts apart; it costs FastAPI's dependency solving, which
        :meth:`limit` does not."""
        from fastapi import Depends

        _require_form_parser(kw.get("key"))
        spec = LimitSpec.make(policy, name=kw.get("scope"), **kw)
        routes: Dict[Any, Route] = {}

        async def rate_limit(request: Request) -> None:
            scope = request.scope
            gate = self.gate
            if not gate.options.enabled:
                return
            checks = scope.get(_SCOPE_KEY)
            if checks is None:
                raise RuntimeError("ratewarden.asgi: depends() needs RateLimitMiddleware: RateLimiter(app) or "
                                   "limiter.init_app(app) installs it")
            app_route = scope.get("route")
            route = routes.get(id(app_route))
            if route is None:
                route = routes[id(app_route)] = self._dependency_route(spec, rate_limit, app_route)
            if gate.skip is not None and await _maybe(gate.skip(request)):
                return
            if route.needs_form and "ratewarden.form" not in scope:
                scope["ratewarden.form"] = await request.form()
            checked = await gate.acheck(route, request, request.method)
            if checked is None:
                return
            checks.append(checked)
            if checked.key_error is not None:
                raise RateLimitKeyError()
            if checked.refused >= 0:
                raise RateLimitExceeded(gate.refusal(checked, with_fields=False))

        if not self._dependencies:
            for app in self._apps:
                self._add_handlers(app)
        self._dependencies.add(rate_limit)
        return Depends(rate_limit)

    def _dependency_route(self, spec: LimitSpec, function: Any, app_route: Any) -> Route:
        """A dependency's limit on one route: counted under the route's name (its path: _route_name) and the
        dependency's rank among the route's rate-limit dependencies (declaration order: the same in every process)."""
        endpoint = getattr(app_route, "endpoint", None)
        name = getattr(app_route, "name", None) or getattr(endpoint, "__name__", "route")
        rid = getattr(app_route, "_ratewarden_path", None) or route_name(getattr(app_route, "path", ""))
        ours = [d.call for d in _dependencies(app_route) if d.call in self._dependencies]
        rank = ours.index(function) + 1 if function in ours else 1
        if len(self._limits_of(endpoint)) + rank > 1:  # the endpoint's decorator limits come first
            rid = f"{rid}#dep{rank}"
        if len(ours) > 1 and spec.name is None:
            name = f"{name}-{rank}"
        return self.gate.route([spec], name, rid, self.key, app_wide=False)

    async def _refusal_response(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RateLimitExceeded)
        return await self.refusal_response(request, exc.refusal)

    async def refusal_response(self, request: Request, refusal: Refusal) -> Response:
        """The 429 (without the rate-limit fields: the middleware adds them), or the custom handler's answer."""
        handler = self.options.refusal
        if callable(handler):
            return await _maybe(handler(request, refusal))
        return Response(refusal.body, refusal.status, media_type=refusal.content_type)

    # --- the middleware's part -------------------------------------------------------------------------------------

    def _limits_of(self, endpoint: Any) -> List[LimitSpec]:
        for f in wrapped_chain(endpoint):
            specs = self._limits.get(f)
            if specs is not None:
                return specs
        return []

    def install(self, router: Any) -> None:
        """Wraps each route of ``router``, and of the routers mounted or included in it, that has limits — its own,
        else the default one, and the app-wide one unless it is exempt — so that they are checked once the router has
        found it; a plain ASGI app mounted in it gets the default and app-wide limits, and with an app-wide limit a
        request that matches no route (404) is counted by it. Done on the first request, and again when a router met
        here has gained or lost routes since."""
        with self._lock:
            if not self.stale(router):
                return
            watched: List[Tuple[Any, int]] = []
            self._install(router, watched, set(), "")
            self._watched[id(router)] = watched

    def stale(self, router: Any) -> bool:
        """Whether ``router``'s routes (or those of a router met in it) changed since they were wrapped."""
        watched = self._watched.get(id(router))
        if watched is None:
            return True
        for sub, count in watched:
            if len(sub.routes) != count:
                return True
        return False

    def _install(self, router: Any, watched: List[Tuple[Any, int]], seen: set, prefix: str) -> None:
        """``prefix``: the path template of the mounts and includes that lead to ``router``."""
        routes = getattr(router, "routes", None)
        if routes is None or id(router) in seen:
            return
        seen.add(id(router))
        watched.append((router, len(routes)))
        if self.gate.app_spec is not None and not getattr(router, "_ratewarden", False) and \
                callable(getattr(router, "default", None)):  # a Router: its answer to a request no route matched
            self.outer_fields = True  # a Starlette router raises its 404 for the exception middleware to answer
            router.default = _RouteApp(self, self.gate.route([], "not_found", "@not_found", self.key), router.default,
                                       False)
            router._ratewarden = True
        for app_route in routes:
            included = getattr(app_route, "original_router", None)
            if included is not None:  # FastAPI's include_router (recent releases): the router's routes, kept there
                within = prefix + _include_prefix(app_route)
                self._install(included, watched, seen, within)
                self._install_included(app_route, watched, seen, prefix)
                continue
            self._install_route(app_route, watched, seen, prefix)

    def _install_route(self, app_route: Any, watched: List[Tuple[Any, int]], seen: set, prefix: str) -> None:
        path = prefix + getattr(app_route, "path", "")  # a Host has none
        if isinstance(app_route, (Mount, Host)):
            mounted = getattr(app_route, "_base_app", app_route.app)
            if hasattr(mounted, "routes"):  # a router, or an app of its own
                self._install(getattr(mounted, "router", mounted), watched, seen, path)
            else:
                self._wrap(app_route, mounted, getattr(app_route, "name", None) or
                           getattr(mounted, "__name__", type(mounted).__name__), False, path)
            return
        endpoint = getattr(app_route, "endpoint", None)
        if endpoint is not None:
            self._wrap(app_route, endpoint, getattr(app_route, "name", None) or getattr(endpoint, "__name__", "route"),
                       any(d.call in self._dependencies for d in _dependencies(app_route)), path)

    def _install_included(self, branch: Any, watched: List[Tuple[Any, int]], seen: set, prefix: str) -> None:
        """An included router's routes as FastAPI answers them: an APIRoute is handled by itself (wrapped above), but
        a plain Starlette route (``router.add_route``, ``Route``, a ``Mount``) by a copy made for the include, whose
        handle is its own — left alone, every request to it would go unlimited. The copies are kept by the branch
        until the router's routes change (then ``stale`` brings the install here again). The branches and copies met
        here carry the whole path below the router that holds ``branch``: ``prefix`` is that router's."""
        candidates = getattr(branch, "effective_candidates", None)
        if candidates is None:
            return
        for candidate in candidates():
            if hasattr(candidate, "original_router"):  # a router included in the included one
                self._install_included(candidate, watched, seen, prefix)
                continue
            copy = getattr(candidate, "starlette_route", None)
            if copy is not None and copy is not getattr(candidate, "original_route", None):
                self._install_route(copy, watched, seen, prefix)

    def _wrap(self, app_route: Any, target: Any, name: str, has_dependency: bool, path: str) -> None:
        """Checks the limits of ``target`` (an endpoint, a mounted app) before ``app_route`` handles a request. The
        route's ``handle`` is wrapped, not its ``app``: FastAPI calls an included route's handle with an app of
        its own making."""
        if getattr(app_route, "_ratewarden", False):
            return  # a router included twice: its routes count under the first include's path
        app_route._ratewarden_path = rid = route_name(path)  # for depends() too
        own = self._limits_of(target)
        exempt = any(f in self._exempt for f in wrapped_chain(target))
        specs = own or ([self.gate.default_spec] if self.gate.default_spec is not None and not exempt
                        and not has_dependency else [])
        route = self.gate.route(specs, name, rid, self.key, app_wide=not exempt)
        app_route._ratewarden = True
        if route.checks or has_dependency:
            if not _answers_errors(app_route):
                self.outer_fields = True
            app_route.handle = _RouteApp(self, route, app_route.handle, has_dependency,
                                         getattr(app_route, "methods", None))


def _scope_address(options: Options) -> Callable[[Scope], str]:
    """The client address of a request, read from its scope (the proxy count and the IPv6 subnet applied)."""
    return address_reader(options, _scope_peer, _scope_forwarded)


def _scope_peer(scope: Scope) -> str:
    client = scope.get("client")
    return client[0] if client else ""


def _scope_forwarded(scope: Scope) -> List[str]:
    return [v.decode("latin-1") for k, v in scope["headers"] if k == b"x-forwarded-for"]


class _RouteApp:
    """An app route's ASGI app with its limits checked first (the route's own, else the default one; the app-wide
    one), and the fields of every limit the request met (depends()'s too) added to the response's start."""

    def __init__(self, limiter: RateLimiter, route: Route, app: ASGIApp, has_dependency: bool,
                 methods: Optional[Any] = None) -> None:
        self.limiter = limiter
        gate = self.gate = limiter.gate
        self.enabled = limiter.options.enabled
        self.route = route
        self.app = app
        self.methods = methods  # the route's: another method is answered 405 by the route, unlimited
        # Checked without awaiting: a store that answers at once, no skip function, no form to read.
        self.quick = bool(route.checks) and route.sync and gate.skip is None and not route.needs_form
        # The plain route (Route.plain) without depends(): its requests take the short path.
        self.plain = route.plain if not has_dependency else None
        self.address = limiter.scope_address

    def __call__(self, scope: Scope, receive: Any, send: Any) -> Awaitable[None]:
        # Not a coroutine: a request that needs no waiting is checked here and handed on, without a coroutine of ours
        # between the router and the route.
        if not self.enabled or scope["type"] != "http" or (self.methods and scope["method"] not in self.methods):
            return self.app(scope, receive, send)
        checks: Optional[List[Checked]] = scope.get(_SCOPE_KEY)
        plain = self.plain
        if plain is not None and checks is None:
            # The short path: a plain route's decision made here as Gate.check makes it, and the fields of an
            # allowed one added as they are.
            key = self.address(scope)
            if key:
                key = plain.prefix + key
                if not plain.in_process:
                    return self._plain_async(scope, receive, send, key)
                try:
                    decision = plain.hit(key, plain.cost)
                except StoreError as error:
                    return self._decided(scope, receive, send, None, error)
                except Exception:  # nothing counted (a key the store refuses): the general path answers it
                    return self._general(scope, receive, send, None)
                return self._decided(scope, receive, send, decision)
        return self._general(scope, receive, send, checks)

    async def _plain_async(self, scope: Scope, receive: Any, send: Any, key: str) -> None:
        """The short path on a store that waits."""
        plain = self.plain
        assert plain is not None
        try:
            decision = await plain.ahit(key, plain.cost)
        except StoreError as error:
            await self._decided(scope, receive, send, None, error)
            return
        except Exception:
            await self._general(scope, receive, send, None)
            return
        await self._decided(scope, receive, send, decision)

    def _decided(self, scope: Scope, receive: Any, send: Any, decision: Optional[Decision],
                 error: Optional[StoreError] = None) -> Awaitable[None]:
        """The rest of the short path: an allowed request goes on with its fields as they are; a denial or a store
        error as the general path goes on from them."""
        if decision is not None and decision.allowed:
            return self.app(scope, receive, _allowed_sender(self.gate, self.route.fields.raw_allowed(decision), send))
        checked = self.gate.decided(self.route, decision, error)
        checks = scope[_SCOPE_KEY] = [checked]
        send = _fields_sender(self.gate, checks, send)
        if checked.refused >= 0:
            return self._refuse(scope, receive, send, Request(scope, receive), checked)
        return self.app(scope, receive, send)

    def _general(self, scope: Scope, receive: Any, send: Any, checks: Optional[List[Checked]]) -> Awaitable[None]:
        if checks is None:  # not under the middleware's send (a sub-app's route): this app adds the fields
            checks = scope[_SCOPE_KEY] = []
            send = _fields_sender(self.gate, checks, send)
        if not self.quick:
            return self._check(scope, receive, send, checks)
        request = Request(scope, receive)
        checked = self.gate.check(self.route, request, scope["method"])
        if checked is not None:
            if checked.key_error is not None or checked.refused >= 0:
                return self._answer(scope, receive, send, request, checks, checked)
            checks.append(checked)
        return self.app(scope, receive, send)

    async def _check(self, scope: Scope, receive: Any, send: Any, checks: List[Checked]) -> None:
        gate, route = self.gate, self.route
        if route.checks:
            request = Request(scope, receive)
            if gate.skip is None or not await _maybe(gate.skip(request)):
                if route.needs_form:
                    # The body is read for the key, then given again to the endpoint.
                    body = await request.body()
                    scope["ratewarden.form"] = await request.form()
                    receive = _replay(body, receive)
                method = scope["method"]
                checked = gate.check(route, request, method) if route.sync else await gate.acheck(route, request,
                                                                                                  method)
                if checked is not None and (checked.key_error is not None or checked.refused >= 0):
                    await self._answer(scope, receive, send, request, checks, checked)
                    return
                if checked is not None:
                    checks.append(checked)
        await self.app(scope, receive, send)

    async def _answer(self, scope: Scope, receive: Any, send: Any, request: Request, checks: List[Checked],
                      checked: Checked) -> None:
        """The answer to a request the check stopped: a 400 without fields (no key), or the refusal."""
        if checked.key_error is not None:
            status, body_, content_type = key_rejection(checked.key_error)
            await Response(body_, status, media_type=content_type)(scope, receive, send)
            return
        checks.append(checked)
        await self._refuse(scope, receive, send, request, checked)

    async def _refuse(self, scope: Scope, receive: Any, send: Any, request: Request, checked: Checked) -> None:
        """The refusal; ``send`` adds the fields (and settles)."""
        gate = self.gate
        refusal = gate.refusal(checked, with_fields=False)
        if callable(gate.options.refusal):
            response = await self.limiter.refusal_response(request, refusal)
            await response(scope, receive, send)
            return
        # The refusal as Response(body, status, media_type=...) would send it, without making one.
        await send({"type": "http.response.start", "status": refusal.status,
                    "headers": [(b"content-length", str(len(refusal.body)).encode()),
                                (b"content-type", refusal.content_type.encode("latin-1"))]})
        await send({"type": "http.response.body", "body": refusal.body})


def _fields_sender(gate: Gate, checks: List[Checked], send: Any) -> Any:
    """The ``send`` of a limited request: adds the fields of the limits it met (``checks``, which depends() may still
    extend) to the response's start and, once the response is sent, gives back what count_when does not count (a
    refund never delays the response). A closure, not an object: it is made for every request; and not a coroutine
    but what ``send`` returns, but for the message after which a refund is due."""
    status = 0  # the response's, while a check has a hit to settle

    def fields_sender(message: Any) -> Awaitable[None]:
        nonlocal status
        if message["type"] == "http.response.start":
            if checks:
                fields = gate.raw_fields(checks)
                if fields:
                    message["headers"] = _with_fields(gate, message.get("headers", ()), fields)
                if gate.settles:
                    for checked in checks:
                        if checked.charged:  # settled once the response is sent (below)
                            status = message["status"]
                            break
        elif status and not message.get("more_body", False):
            settled, status = status, 0
            return _send_and_settle(gate, checks, send, message, settled)
        return send(message)

    return fields_sender


def _allowed_sender(gate: Gate, fields: List[Tuple[bytes, bytes]], send: Any) -> Any:
    """The ``send`` of a request a plain route allowed: ``fields`` added to the response's start."""

    def allowed_sender(message: Any) -> Awaitable[None]:
        if message["type"] == "http.response.start":
            message["headers"] = _with_fields(gate, message.get("headers", ()), fields)
        return send(message)

    return allowed_sender


async def _send_and_settle(gate: Gate, checks: List[Checked], send: Any, message: Any, status: int) -> None:
    await send(message)
    for checked in checks:
        if checked.charged:
            await gate.asettle(checked, status)


def _with_fields(gate: Gate, headers: Any, fields: List[Tuple[bytes, bytes]]) -> List[Tuple[bytes, bytes]]:
    """An app's headers with ours: its own fields of these names are replaced, but for its Retry-After."""
    if headers.__class__ is not list:
        headers = list(headers)
    lengths, names = gate.raw_field_lengths, gate.raw_field_names
    for h in headers:
        if len(h[0]) in lengths and h[0].lower() in names:
            break
    else:  # the usual response: none of ours
        return headers + fields
    out = [h for h in headers if h[0].lower() not in _REPLACED]
    for field in fields:
        if field[0] == b"Retry-After" and any(h[0].lower() == b"retry-after" for h in out):
            continue
        out.append(field)
    return out


class RateLimitMiddleware:
    """The ASGI middleware: on the first request (and when routes were added), it wraps the app's routes that have
    limits (see ``RateLimiter.install``); then it passes requests on, adding the fields to the responses only where
    a limited route does not answer them all itself (``RateLimiter.outer_fields``)."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter) -> None:
        self.app = app
        self.limiter = limiter
        self.gate = limiter.gate
        self.enabled = limiter.options.enabled

    def __call__(self, scope: Scope, receive: Any, send: Any) -> Awaitable[None]:
        # Not a coroutine (as _RouteApp): what the app returns is awaited by the middleware that called this one.
        router = getattr(scope.get("app"), "router", None)
        if router is not None and self.limiter.stale(router):
            self.limiter.install(router)
        if not self.enabled or scope["type"] != "http" or not self.limiter.outer_fields:
            return self.app(scope, receive, send)
        # The checks a route (or a 404) makes on the request land here: their fields go on whatever response the
        # app makes, its exception handlers' too (a 404, an HTTPException raised by the endpoint).
        checks: List[Checked] = []
        scope[_SCOPE_KEY] = checks
        return self.app(scope, receive, _fields_sender(self.gate, checks, send))


_REPLACED = frozenset(n.encode() for n in RATE_LIMIT_FIELDS)


def _replay(body: bytes, receive: Any) -> Any:
    """A receive that gives ``body`` once, then what ``receive`` gives (a disconnect)."""
    sent = False

    async def replayed() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


# Starlette 0.28 and later: a route of a function answers the exceptions it raises (with the app's handlers).
_ROUTES_ANSWER_ERRORS = hasattr(routing, "wrap_app_handling_exceptions")


def _answers_errors(app_route: Any) -> bool:
    """Whether ``app_route`` answers its endpoint's exceptions itself, through the send it is given (so with our
    fields): a FastAPI route, or a Starlette route of a function (not of an ASGI app or an endpoint class), as
    Starlette's Route decides."""
    if not _ROUTES_ANSWER_ERRORS:
        return False
    if hasattr(app_route, "dependant"):  # FastAPI's APIRoute
        return True
    if type(app_route) is not routing.Route:
        return False
    endpoint = app_route.endpoint
    while isinstance(endpoint, functools.partial):
        endpoint = endpoint.func
    return inspect.isfunction(endpoint) or inspect.ismethod(endpoint)


def _require_form_parser(key: Any) -> None:
    """A form key needs Starlette's form parser, python-multipart: without it every request would fail (500) and go
    unlimited, so its absence is an error where the limit is declared, at start-up."""
    if isinstance(key, KeyPart) and key.needs_form and starlette_requests.parse_options_header is None:
        raise ImportError(f"{key!r} reads the request's form, which Starlette parses with python-multipart: it is not "
                          "installed (pip install 'ratewarden[fastapi]' or 'ratewarden[asgi]' brings it, or pip "
                          "install python-multipart)")


def _include_prefix(branch: Any) -> str:
    """The path an include of FastAPI's adds to the routes of the router it includes."""
    return getattr(getattr(branch, "include_context", None), "prefix", "") or ""


async def _key_error_response(request: Request, exc: Exception) -> Response:
    status, body, content_type = key_rejection("")
    return Response(body, status, media_type=content_type)


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _dependencies(route: Any) -> List[Any]:
    """A FastAPI route's dependencies, nested ones included, in declaration order (depth first)."""
    out: List[Any] = []

    def walk(dependant: Any) -> None:
        for dep in getattr(dependant, "dependencies", ()):
            out.append(dep)
            walk(dep)

    walk(getattr(route, "dependant", None))
    return out
