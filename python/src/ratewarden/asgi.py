"""ratewarden.asgi: rate limits for Starlette and FastAPI, fully asynchronous (every store call is ``Limiter.ahit``:
the event loop never waits on the store).

    limiter = RateLimiter(app, application="1000/minute", store="redis://127.0.0.1:6379")

    @app.post("/login", dependencies=[limiter.depends("5/minute", key=keys.form("username"))])   # FastAPI
    async def login(): ...

    @limiter.limit("5/minute")                                                                 # Starlette
    async def search(request): ...

``RateLimiter(app)`` (or ``init_app(app)``) installs :class:`RateLimitMiddleware`, which applies the app-wide and
default limits and writes the rate-limit fields of every limit the request met, and an exception handler for the
route limits' refusals. The options are those of every adapter (docs/python.md).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Awaitable, Callable, Dict, Iterable, List, MutableMapping, Optional, Tuple, Union

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match

from ._client_key import client_key
from ._http import OPTIONS, Checked, Gate, LimitSpec, Options, Refusal, Route, address_of, key_rejection
from .keys import KeyPart

__all__ = ["RateLimitExceeded", "RateLimitKeyError", "RateLimitMiddleware", "RateLimiter"]

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]
KeyFunc = Callable[[Request], Any]

_SCOPE_KEY = "ratewarden"  # scope[_SCOPE_KEY]: the (gate, checked) of each check made on the request


class RateLimitExceeded(HTTPException):
    """Raised by a route limit that refuses (the middleware's exception handler answers it); ``refusal`` holds the
    decision, the refused policy, the body."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(429, refusal.body.decode(), {"Retry-After": str(refusal.retry_after)})
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
        proxies, subnet = options.proxy_count, options.ipv6_subnet

        def key(req: Request) -> str:
            client = req.scope.get("client")
            peer = client[0] if client else ""
            if proxies:
                return address_of(peer, req.headers.getlist("x-forwarded-for"), proxies, subnet)
            return peer if ":" not in peer else client_key(peer, subnet)

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
        for spec in (self.gate.app_spec, self.gate.default_spec):
            if spec is not None and isinstance(key, KeyPart) and key.needs_form:
                raise ValueError("the app-wide and default limits run before the body is read: their key cannot be a "
                                 "form field (give that key to a route's limit)")
        self.key = key
        self._exempt: set = set()
        self._limited: set = set()  # endpoints and dependencies of route limits: the default limit skips them
        self._by_route: Dict[Any, Optional[Route]] = {}  # the middleware's route of each app route
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Any) -> None:
        """Installs the middleware and the exception handler of route limits on a Starlette or FastAPI app."""
        app.add_middleware(RateLimitMiddleware, limiter=self)
        app.add_exception_handler(RateLimitExceeded, self._refusal_response)
        app.add_exception_handler(RateLimitKeyError, _key_error_response)

    # --- route limits ----------------------------------------------------------------------------------------------

    def limit(self, policy: str, **kw: Any) -> Callable[[Any], Any]:
        """Decorator of an endpoint that takes the request (``async def ep(request)``, or a FastAPI endpoint with a
        ``request: Request`` parameter): ``policy`` per key. Keywords: ``key``, ``cost``, ``methods``,
        ``algorithm``, ``burst``, ``on_store_error``, ``scope``, ``shadow`` (as Flask's ``limit``)."""
        check = self._route_limit(policy, kw)

        def decorator(endpoint: Any) -> Any:
            if not inspect.iscoroutinefunction(endpoint):
                raise TypeError("ratewarden.asgi limit() decorates async endpoints (a sync one would run the "
                                "check in a thread); use depends() with FastAPI's sync endpoints")

            # Stacked limits count apart: the nth from the bottom is the endpoint's nth own limit, in every process.
            n = getattr(endpoint, "_ratewarden_n", 0) + 1

            @functools.wraps(endpoint)
            async def limited(*args: Any, **kwargs: Any) -> Any:
                request = next((a for a in (*args, *kwargs.values()) if isinstance(a, Request)), None)
                if request is None:
                    raise TypeError(f"{endpoint.__qualname__}: a limited endpoint takes the request (request: Request)")
                await check(request, n)
                return await endpoint(*args, **kwargs)

            limited._ratewarden_n = n  # type: ignore[attr-defined]
            self._limited.add(endpoint)
            self._limited.add(limited)
            return limited

        return decorator

    def depends(self, policy: str, **kw: Any) -> Any:
        """A FastAPI dependency: ``dependencies=[limiter.depends("5/minute")]`` (keywords as :meth:`limit`)."""
        from fastapi import Depends

        check = self._route_limit(policy, kw)

        async def rate_limit(request: Request) -> None:
            await check(request, 0)

        check.dependency.append(rate_limit)  # type: ignore[attr-defined]
        self._limited.add(rate_limit)
        return Depends(rate_limit)

    def shared_limit(self, policy: str, scope: str, **kw: Any) -> Callable[[Any], Any]:
        """:meth:`limit` counted once for every endpoint with the same ``scope``."""
        return self.limit(policy, scope=scope, **kw)

    def exempt(self, endpoint: Any) -> Any:
        """Decorator: the endpoint has no app-wide or default limit."""
        self._exempt.add(endpoint)
        return endpoint

    def _route_limit(self, policy: str, kw: Dict[str, Any]) -> Callable[[Request, int], Awaitable[None]]:
        """The check of one route limit; ``n`` (0: find it) is its rank among the endpoint's own limits."""
        scope = kw.get("scope")
        spec = LimitSpec.make(policy, name=scope, **kw)
        routes: Dict[Any, Route] = {}
        dependency: List[Any] = []  # depends() puts its function here

        async def check(request: Request, n: int) -> None:
            scope_ = request.scope
            state = scope_.get(_SCOPE_KEY)
            if state is None:
                raise RuntimeError("ratewarden.asgi: a route limit needs RateLimitMiddleware: RateLimiter(app) or "
                                   "limiter.init_app(app) installs it")
            if not self.options.enabled:
                return
            endpoint = scope_.get("endpoint")
            route = routes.get(endpoint)
            if route is None:
                app_route = scope_.get("route")
                name = getattr(app_route, "name", None) or getattr(endpoint, "__name__", "route")
                rid = f"{getattr(endpoint, '__module__', '')}.{getattr(endpoint, '__qualname__', name)}"
                rank = n
                if n:  # a decorator, ranked from the bottom: the outermost one's rank is the endpoint's count
                    total = getattr(endpoint, "_ratewarden_n", n)
                    rank = total - n + 1  # named in declaration order, top to bottom
                else:  # a dependency: its rank among the route's rate-limit dependencies, in declaration order
                    ours = [d.call for d in _dependencies(app_route) if d.call in self._limited]
                    n = rank = ours.index(dependency[0]) + 1 if dependency and dependency[0] in ours else 1
                    total = len(ours)
                if n > 1:
                    rid = f"{rid}#{n}"
                if total > 1 and spec.name is None:
                    name = f"{name}-{rank}"
                route = routes[endpoint] = self.gate.route([spec], name, rid, self.key, app_wide=False)
            gate = self.gate
            if gate.skip is not None and await _maybe(gate.skip(request)):
                return
            if route.needs_form and "ratewarden.form" not in scope_:
                scope_["ratewarden.form"] = await request.form()
            checked = await gate.acheck(route, request, request.method)
            if checked is None:
                return
            state.append(checked)
            if checked.key_error is not None:
                raise RateLimitKeyError()
            if checked.refused >= 0:
                raise RateLimitExceeded(gate.refusal(checked))

        check.dependency = dependency  # type: ignore[attr-defined]
        return check

    async def _refusal_response(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RateLimitExceeded)
        return await self.refusal_response(request, exc.refusal)

    async def refusal_response(self, request: Request, refusal: Refusal) -> Response:
        """The 429 (without the rate-limit fields: the middleware adds them), or the custom handler's answer."""
        handler = self.options.refusal
        if callable(handler):
            return await _maybe(handler(request, refusal))
        return Response(refusal.body, 429, media_type=refusal.content_type)

    # --- the middleware's part -------------------------------------------------------------------------------------

    def app_route(self, scope: Scope) -> Optional[Route]:
        """The app-wide and default limits of a request: the default only on a route without limits of its own, none
        on an exempt endpoint (the route is found as the router will find it, when either needs it)."""
        gate = self.gate
        if gate.default_spec is None and not self._exempt:
            route = self._by_route.get(None)
            if route is None:
                route = self._by_route[None] = gate.route([], "application", "@app", self.key)
            return route
        app_route = _find_route(scope)
        route_id = id(app_route) if app_route is not None else None  # app routes live as long as the app
        route = self._by_route.get(route_id, False)
        if route is False:
            endpoint = getattr(app_route, "endpoint", None)
            own = app_route is not None and (endpoint in self._limited or any(
                getattr(d, "call", None) in self._limited for d in _dependencies(app_route)))
            exempt = endpoint in self._exempt
            specs = [gate.default_spec] if gate.default_spec is not None and not own and not exempt else []
            name = getattr(app_route, "name", None) or "default"
            methods = ",".join(sorted(getattr(app_route, "methods", None) or ()))
            route = gate.route(specs, name, f"{methods} {getattr(app_route, 'path', '')}", self.key,
                               app_wide=not exempt)
            self._by_route[route_id] = route
        return route


class RateLimitMiddleware:
    """The ASGI middleware (pure ASGI: no per-request task, no body buffering): checks the app-wide and default limits
    before the app runs, and adds the fields of every limit the request met to the response's start."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter) -> None:
        self.app = app
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        limiter = self.limiter
        if scope["type"] != "http" or not limiter.options.enabled:
            await self.app(scope, receive, send)
            return
        checks: List[Checked] = []
        scope[_SCOPE_KEY] = checks
        route = limiter.app_route(scope)
        if route is not None and route.checks:
            gate = limiter.gate
            request = Request(scope, receive)
            if gate.skip is None or not await _maybe(gate.skip(request)):
                checked = await gate.acheck(route, request, scope["method"])
                if checked is not None:
                    checks.append(checked)
                    if checked.key_error is not None:
                        status, body, content_type = key_rejection(checked.key_error)
                        await Response(body, status, media_type=content_type)(scope, receive, send)
                        return
                    if checked.refused >= 0:
                        response = await limiter.refusal_response(request, gate.refusal(checked))
                        await response(scope, receive, _with_fields(send, limiter, checks))
                        return
        await self.app(scope, receive, _with_fields(send, limiter, checks))


def _with_fields(send: Any, limiter: RateLimiter, checks: List[Checked]) -> Any:
    async def send_with_fields(message: Any) -> None:
        if message["type"] == "http.response.start" and checks:
            fields = limiter.gate.fields_of(checks)
            if fields:
                names = {name.lower().encode("latin-1") for name, _ in fields}
                kept = [(n, v) for n, v in message.get("headers", ()) if n.lower() not in names or n.lower() ==
                        b"retry-after"]
                present = {n.lower() for n, _ in kept}
                kept += [(n.encode("latin-1"), v.encode("latin-1")) for n, v in fields
                         if n.lower().encode("latin-1") not in present]
                message = {**message, "headers": kept}
        await send(message)

    return send_with_fields


async def _key_error_response(request: Request, exc: Exception) -> Response:
    status, body, content_type = key_rejection("")
    return Response(body, status, media_type=content_type)


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _find_route(scope: Scope) -> Any:
    """The app route that will take the request (the router's first full match), or None."""
    app = scope.get("app")
    for route in getattr(getattr(app, "router", None), "routes", ()):
        match, _ = route.matches(scope)
        if match == Match.FULL:
            return route
    return None


def _dependencies(route: Any) -> List[Any]:
    """A FastAPI route's dependencies, nested ones included, in declaration order (depth first)."""
    out: List[Any] = []

    def walk(dependant: Any) -> None:
        for dep in getattr(dependant, "dependencies", ()):
            out.append(dep)
            walk(dep)

    walk(getattr(route, "dependant", None))
    return out
