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

from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, TypeVar, Union

from flask import Blueprint, Flask, Request, Response, current_app, g, request
from werkzeug.exceptions import BadRequest, TooManyRequests

from ._client_key import DEFAULT_IPV6_SUBNET
from ._http import OPTIONS, Checked, Gate, LimitSpec, Options, Refusal, Route, address_of, address_reader, wrapped_chain
from ._native import Decision
from ._route_name import route_name
from .keys import KeyPart

__all__ = ["RateLimitExceeded", "RateLimitKeyError", "RateLimiter", "client_address"]

KeyFunc = Callable[[], Any]
F = TypeVar("F", bound=Callable[..., Any])


def client_address() -> str:
    """The client's IP address: the key function used when none is given.

    With ``RATEWARDEN_PROXY_COUNT = N`` (the number of reverse proxies in front of the app, each appending to
    X-Forwarded-For), it is the address the outermost of them saw: the Nth X-Forwarded-For value from the right,
    which a client cannot forge; a request that did not cross N proxies uses the peer address. IPv6 addresses are
    reduced to their network of ``RATEWARDEN_IPV6_SUBNET`` bits (default 56, which one client usually owns whole),
    IPv4-mapped ones to their IPv4 address.
    """
    config = current_app.config
    req = request._get_current_object()
    return address_of(req.remote_addr, req.headers.getlist("X-Forwarded-For"),
                      config.get("RATEWARDEN_PROXY_COUNT", 0), config.get("RATEWARDEN_IPV6_SUBNET", DEFAULT_IPV6_SUBNET))


def _refusal_description(policy: str, retry_after_s: int) -> str:
    return f"{policy} exceeded; retry in {retry_after_s} s"


class _Access:
    """How the HTTP layer reads a Flask request (``flask.request``'s object); a user's functions take no argument."""

    @staticmethod
    def address_key(options: Options) -> Callable[[Request], str]:
        return address_reader(options, lambda req: req.remote_addr, lambda req: req.headers.getlist("X-Forwarded-For"))

    @staticmethod
    def header(req: Request, name: str) -> Optional[str]:
        return req.headers.get(name)

    @staticmethod
    def user(req: Request) -> Any:
        try:
            from flask_login import current_user  # type: ignore[import-not-found]
        except ImportError:
            current_user = None
        if current_user is not None and getattr(current_user, "is_authenticated", False):
            return current_user.get_id()
        user = g.get("user")
        return getattr(user, "id", user)

    @staticmethod
    def form(req: Request, name: str) -> Optional[str]:
        return req.form.get(name)

    @staticmethod
    def call(func: Callable[[], Any]) -> Callable[[Request], Any]:
        return lambda req: func()


class RateLimitExceeded(TooManyRequests):
    """429 Too Many Requests with ``Retry-After``; register an error handler for it (or for 429) to customise.

    ``decision`` is the core's refusal (with ``on_store_error="deny"``, the refusal made when the store failed);
    ``policy`` is the refused limit's policy string; ``refusal`` the whole answer (ratewarden's ``Refusal``: its body
    in the form of ``RATEWARDEN_REFUSAL``, its fields).
    """

    def __init__(self, policy: str, decision: Decision, retry_after_s: int, refusal: Optional[Refusal] = None) -> None:
        super().__init__(description=_refusal_description(policy, retry_after_s), retry_after=retry_after_s)
        self.policy = policy
        self.decision = decision
        self.refusal = refusal

    def get_body(self, environ: Any = None, scope: Any = None) -> str:
        if self.refusal is not None:
            return self.refusal.body.decode()
        return f"{self.code} {self.name}: {self.description}\n"

    def get_headers(self, environ: Any = None, scope: Any = None) -> List[Tuple[str, str]]:
        headers = [(k, v) for k, v in super().get_headers(environ, scope) if k.lower() != "content-type"]
        content_type = self.refusal.content_type if self.refusal is not None else "text/plain; charset=utf-8"
        return [("Content-Type", content_type), *headers]


class RateLimitKeyError(BadRequest):
    """400: the key function of a limit failed (``RATEWARDEN_ON_KEY_ERROR = "reject"``, the default)."""

    def get_body(self, environ: Any = None, scope: Any = None) -> str:
        return f"{self.code} {self.name}: {self.description}\n"

    def get_headers(self, environ: Any = None, scope: Any = None) -> List[Tuple[str, str]]:
        return [("Content-Type", "text/plain; charset=utf-8")]


class _AppState:
    """What init_app resolved for one app: its Gate, and the routes it has met."""

    __slots__ = ("app", "gate", "enabled", "custom_errors", "routes")

    def __init__(self, app: Flask, gate: Gate) -> None:
        self.app = app
        self.gate = gate
        self.enabled = gate.options.enabled
        # A Flask subclass that changes how HTTP exceptions are handled gets every refusal as the exception.
        self.custom_errors = any(getattr(type(app), m) is not getattr(Flask, m) for m in _ERROR_HANDLING)
        # By endpoint; a class-based view's by (endpoint, method): its methods may have limits of their own.
        self.routes: Dict[Any, Route] = {}


class RateLimiter:
    """The Flask extension. ``RateLimiter(app)`` or ``RateLimiter()`` then ``init_app(app)``.

    The keyword arguments are the options of every ratewarden adapter (docs/python.md), defaults that the app's
    ``RATEWARDEN_<OPTION>`` configuration overrides; ``key`` is the default key: a function of no argument (it
    reads ``flask.request``) or a ``ratewarden.keys`` part, by default :func:`client_address`'s.
    """

    def __init__(self, app: Optional[Flask] = None, *, key: Union[KeyFunc, KeyPart, None] = None,
                 **options: Any) -> None:
        unknown = set(options) - set(OPTIONS)
        if unknown:
            raise TypeError(f"RateLimiter() got unknown options: {', '.join(sorted(unknown))}")
        self._options = options
        self._key = None if key is client_address else key
        self._limits: Dict[Any, List[LimitSpec]] = {}  # by view function, method or class, in declaration order
        self._exempt: set = set()  # views, classes and blueprint names
        self._states: List[_AppState] = []
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Reads the app's RATEWARDEN_* configuration, opens the store and installs the request hooks."""
        config = app.config
        for name, value in {**OPTIONS, **self._options}.items():
            config.setdefault(f"RATEWARDEN_{name.upper()}", value)
        options = Options.read({name: config[f"RATEWARDEN_{name.upper()}"] for name in OPTIONS},
                               lambda name: f"RATEWARDEN_{name.upper()}")
        state = _AppState(app, Gate(options, _Access))
        self._states.append(state)
        app.extensions["ratewarden"] = self
        app.before_request(lambda: self._check(state))
        app.after_request(self._add_headers)

    def limit(
        self,
        policy: str,
        *,
        key: Union[KeyFunc, KeyPart, None] = None,
        cost: Union[int, Callable[[], int]] = 1,
        methods: Optional[Iterable[str]] = None,
        algorithm: Optional[str] = None,
        burst: Optional[int] = None,
        on_store_error: Optional[str] = None,
        scope: Optional[str] = None,
        shadow: Optional[bool] = None,
        count_when: Optional[Callable[[int], bool]] = None,
    ) -> Callable[[F], F]:
        """Decorator: limits a view to ``policy`` (``"5/minute"``, ``"10/second; 100/hour"``) per ``key()``.

        It goes on a view function (either side of ``@app.route``), in a class-based view's ``decorators``, on a
        ``MethodView`` method (that method only) or on a ``View`` class (all its methods). Several ``@limit`` on one
        view all apply, top to bottom; the first refusal stops (the limits checked before it stay charged). Each
        counts on its own unless ``scope`` names a shared one (see :meth:`shared_limit`). ``cost`` is an int or a
        function of the request; ``methods`` restricts the limit to those HTTP methods; ``count_when``, a function
        of the response's status code, gives the hit back when it is false (count only failed logins:
        ``count_when=lambda status: status >= 400``).
        """
        spec = LimitSpec.make(policy, key=key, scope=scope, name=scope, cost=cost, methods=methods,
                              algorithm=algorithm, burst=burst, on_store_error=on_store_error, shadow=shadow,
                              count_when=count_when)

        def decorator(f: F) -> F:
            if isinstance(f, Blueprint):
                raise TypeError("limit() on a Blueprint: give each view its limit, or use the app-wide "
                                "RATEWARDEN_APPLICATION / RATEWARDEN_DEFAULT limits")
            if isinstance(f, (staticmethod, classmethod)):
                raise TypeError("limit() goes on a view function, a View class or a MethodView's method")
            # Decorators run bottom-up: inserting first keeps the declaration order.
            self._limits.setdefault(f, []).insert(0, spec)
            self._forget_routes()
            return f

        return decorator

    def shared_limit(
        self,
        policy: str,
        scope: str,
        *,
        key: Union[KeyFunc, KeyPart, None] = None,
        cost: Union[int, Callable[[], int]] = 1,
        methods: Optional[Iterable[str]] = None,
        on_store_error: Optional[str] = None,
    ) -> Callable[[F], F]:
        """Decorator: one limit for every view that uses the same ``scope`` (one count per key for all of them;
        ``scope`` is also the policy's name in the headers)."""
        return self.limit(policy, key=key, cost=cost, methods=methods, on_store_error=on_store_error, scope=scope)

    def exempt(self, f: Any) -> Any:
        """A view (function or class) has no limits at all, not even the default or app-wide one. On a Blueprint
        (``limiter.exempt(bp)``): its views, and those of blueprints nested in it, have no default or app-wide limit
        (a ``@limit`` written on one of them still applies)."""
        self._exempt.add(f.name if isinstance(f, Blueprint) else f)
        self._forget_routes()
        return f

    def stats(self, app: Optional[Flask] = None) -> Dict[str, int]:
        """The counts of ``app`` (default: the current app): ``refused``, ``shadow_refused``, ``store_failures``,
        ``key_failures``, ``allow_listed``, ``deny_listed``, ``blocked``."""
        app = app if app is not None else current_app._get_current_object()  # type: ignore[attr-defined]
        return next(state.gate.stats() for state in self._states if state.app is app)

    def _forget_routes(self) -> None:
        for state in self._states:
            state.routes.clear()

    def _specs(self, objects: Sequence[Any]) -> Optional[List[LimitSpec]]:
        for f in objects:
            specs = self._limits.get(f)
            if specs is not None:
                return specs
        return None

    def _route(self, state: _AppState, endpoint: str, rule: Any, method: str, blueprints: Sequence[str]) -> Route:
        """The limits of ``endpoint`` reached by ``rule`` bound to the app's store (cached per rule, and per method for
        a class-based view). They count under the rule's name (its path: see _route_name)."""
        gate = state.gate
        view = state.app.view_functions.get(endpoint)
        chain = wrapped_chain(view)
        cls = getattr(view, "view_class", None)
        cache_key: Any = id(rule)
        rid = route_name(rule.rule)
        route_ids: List[str] = []
        if view is None or any(f in self._exempt for f in chain) or (cls is not None and cls in self._exempt):
            specs: List[LimitSpec] = []
            app_wide = False
        else:
            specs = list(self._specs(chain) or [])
            route_ids = [rid] * len(specs)
            if cls is not None:
                cache_key = (id(rule), method)
                class_specs = self._limits.get(cls, [])
                handler = getattr(cls, method.lower(), None)
                if handler is None and method == "HEAD":
                    handler = getattr(cls, "get", None)
                method_specs = self._specs(wrapped_chain(handler)) or []
                specs += class_specs + method_specs
                route_ids += [rid] * len(class_specs) + [f"{rid}.{method.lower()}"] * len(method_specs)
            app_wide = not any(bp in self._exempt for bp in blueprints)
            if not specs and app_wide and gate.default_spec is not None:
                specs, route_ids = [gate.default_spec], [rid]
        route = gate.route(specs, endpoint, rid, self._key, app_wide=app_wide, route_ids=route_ids)
        state.routes[cache_key] = route
        return route

    def _check(self, state: _AppState) -> Optional[Response]:
        """before_request: hits the route's limits; a refusal is answered here (see _refuse). This and _add_headers
        run on every request: what does not depend on the request was resolved once per route (_route)."""
        if not state.enabled:
            return None
        req = request._get_current_object()
        endpoint, rule = req.endpoint, req.url_rule
        if endpoint is None or rule is None:
            return None
        route = state.routes.get(id(rule))  # Rules live as long as their app, which holds state
        if route is None:
            route = state.routes.get((id(rule), req.method)) or self._route(state, endpoint, rule, req.method,
                                                                             req.blueprints)
        if not route.checks:
            return None
        gate = state.gate
        if gate.skip is not None and gate.skip(req):
            return None
        checked = gate.check(route, req, req.method)
        if checked is None:
            return None
        req._ratewarden = (gate, checked)  # type: ignore[attr-defined]  # for _add_headers
        if checked.key_error is not None:
            raise RateLimitKeyError("the client could not be identified")
        if checked.refused >= 0:
            return self._refuse(state, req, checked)
        return None

    @staticmethod
    def _refuse(state: _AppState, req: Request, checked: Checked) -> Response:
        """The 429 of a refusal. RateLimitExceeded is raised when the app would do anything with it but turn it into
        its default response (an error handler takes it, TRAP_HTTP_EXCEPTIONS, a Flask subclass); otherwise that
        response is made here, the same one with its fields, without Flask's exception handling (raise, handler
        lookup, the exception run as a WSGI app): then a refusal costs about what an allowed request does."""
        app, gate = state.app, state.gate
        refusal = gate.refusal(checked)
        if callable(gate.options.refusal):
            return app.make_response(gate.options.refusal(req, refusal))  # _add_headers adds the fields
        if refusal.status == 429 and (state.custom_errors or app.config["TRAP_HTTP_EXCEPTIONS"] or
                                      _has_refusal_handler(app, req.blueprints)):
            raise RateLimitExceeded(refusal.policy, refusal.decision, refusal.retry_after, refusal)
        del req._ratewarden  # type: ignore[attr-defined]  # the fields go in now: nothing left for _add_headers
        if checked.charged:
            gate.settle(checked, 429)
        return app.response_class(refusal.body, refusal.status,
                                  [("Content-Type", refusal.content_type), *refusal.headers])

    @staticmethod
    def _add_headers(response: Response) -> Response:
        """after_request: the rate-limit fields of the limits the request met (also on an error handler's response).
        An app's own 429 handler keeps its Retry-After; any other field the response has is replaced."""
        checked: Optional[Tuple[Gate, Checked]] = getattr(request._get_current_object(), "_ratewarden", None)
        if checked is None:
            return response
        if checked[1].charged:
            checked[0].settle(checked[1], response.status_code)
        fields = checked[0].fields(checked[1])
        if fields:
            headers = response.headers
            # werkzeug's add would check each value for a line break (a regular expression): ours have none.
            items = getattr(headers, "_list", None)
            if isinstance(items, list):
                add = items.append
            else:
                items, add = list(headers), lambda field: headers.add(*field)
            for name, _ in items:
                if name.lower() in checked[0].field_names:  # the response has a field of ours already
                    break
            else:
                for field in fields:
                    add(field)  # werkzeug's set would search the headers for it once more
                return response
            present = {name.lower() for name, _ in items}
            for field in fields:
                if field[0].lower() not in present:
                    add(field)
                elif field[0] != "Retry-After":
                    headers.set(*field)
        return response


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
