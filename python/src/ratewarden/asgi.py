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

import threading
from typing import Any, Awaitable, Callable, Dict, List, Tuple, TypeVar, Union

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from ._asgi_install import RouteInstaller, route_dependencies
from ._asgi_readers import Access, Scope, maybe_await, require_form_parser, scope_address_reader
from ._asgi_route import SCOPE_KEY, ASGIApp
from ._asgi_send import fields_sender_for
from ._http import Checked, Gate, LimitSpec, Options, Refusal, Route, key_rejection
from ._route_name import route_name
from .keys import KeyPart

__all__ = ["RateLimitExceeded", "RateLimitKeyError", "RateLimitMiddleware", "RateLimiter"]

KeyFunc = Callable[[Request], Any]
F = TypeVar("F", bound=Callable[..., Any])


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


class RateLimiter(RouteInstaller):
    """The options and limits of one app. ``RateLimiter(app, **options)``, or ``RateLimiter(**options)`` then
    ``init_app(app)``; ``key`` is the default key (a function of the request, maybe async, or a ``keys`` part)."""

    def __init__(self, app: Any = None, *, key: Union[KeyFunc, KeyPart, None] = None, **options: Any) -> None:
        self.options = Options.read(options, lambda name: name)
        self.gate = Gate(self.options, Access)
        require_form_parser(key)
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
        self.scope_address = scope_address_reader(self.options)  # the client address, for a plain route's short path
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
        require_form_parser(kw.get("key"))
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

        require_form_parser(kw.get("key"))
        spec = LimitSpec.make(policy, name=kw.get("scope"), **kw)
        routes: Dict[Any, Route] = {}

        async def rate_limit(request: Request) -> None:
            scope = request.scope
            gate = self.gate
            if not gate.options.enabled:
                return
            checks = scope.get(SCOPE_KEY)
            if checks is None:
                raise RuntimeError("ratewarden.asgi: depends() needs RateLimitMiddleware: RateLimiter(app) or "
                                   "limiter.init_app(app) installs it")
            app_route = scope.get("route")
            route = routes.get(id(app_route))
            if route is None:
                route = routes[id(app_route)] = self._dependency_route(spec, rate_limit, app_route)
            if gate.skip is not None and await maybe_await(gate.skip(request)):
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
        ours = [d.call for d in route_dependencies(app_route) if d.call in self._dependencies]
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
            return await maybe_await(handler(request, refusal))
        return Response(refusal.body, refusal.status, media_type=refusal.content_type)


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
        # Not a coroutine (as RouteApp): what the app returns is awaited by the middleware that called this one.
        router = getattr(scope.get("app"), "router", None)
        if router is not None and self.limiter.stale(router):
            self.limiter.install(router)
        if not self.enabled or scope["type"] != "http" or not self.limiter.outer_fields:
            return self.app(scope, receive, send)
        # The checks a route (or a 404) makes on the request land here: their fields go on whatever response the
        # app makes, its exception handlers' too (a 404, an HTTPException raised by the endpoint).
        checks: List[Checked] = []
        scope[SCOPE_KEY] = checks
        return self.app(scope, receive, fields_sender_for(self.gate, checks, send))


async def _key_error_response(request: Request, exc: Exception) -> Response:
    status, body, content_type = key_rejection("")
    return Response(body, status, media_type=content_type)
