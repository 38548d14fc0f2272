"""ratewarden.django: rate limits for Django views, configured in settings.

    # settings.py
    MIDDLEWARE = [..., "ratewarden.django.RateLimitMiddleware"]
    RATEWARDEN = {"STORE": "redis://127.0.0.1:6379", "APPLICATION": "1000/minute"}

    # views.py
    from ratewarden import keys
    from ratewarden.django import limit

    @limit("5/minute", key=keys.form("username"))
    def login(request): ...

``settings.RATEWARDEN`` holds the options of every adapter (docs/python.md), upper-cased, plus ``KEY`` (the default
key); a function may be given as a dotted path (``"myapp.keys.tenant"``). The middleware applies the app-wide and
default limits and writes the fields of every limit a request met; ``@limit`` works with or without it.
"""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.http import HttpRequest, HttpResponse
from django.utils.module_loading import import_string

from ._http import OPTIONS, Checked, Gate, LimitSpec, Options, Route, address_reader, key_rejection, wrapped_chain
from ._route_name import route_name

__all__ = ["RateLimitMiddleware", "exempt", "limit", "limiter", "shared_limit", "stats"]

F = TypeVar("F", bound=Callable[..., Any])

_LIMITS = "_ratewarden_limits"  # on a decorated view: its LimitSpecs (functools.wraps carries it up)
_EXEMPT = "_ratewarden_exempt"


class _Access:
    """How the HTTP layer reads a Django ``HttpRequest``; a user's functions take the request."""

    @staticmethod
    def address_key(options: Options) -> Callable[[HttpRequest], str]:
        return address_reader(options, lambda req: req.META.get("REMOTE_ADDR"),
                              lambda req: [req.META.get("HTTP_X_FORWARDED_FOR", "")])

    @staticmethod
    def header(req: HttpRequest, name: str) -> Optional[str]:
        return req.headers.get(name)

    @staticmethod
    def user(req: HttpRequest) -> Any:
        user = getattr(req, "user", None)
        return user.pk if user is not None and user.is_authenticated else None

    @staticmethod
    def form(req: HttpRequest, name: str) -> Optional[str]:
        return req.POST.get(name)

    @staticmethod
    def call(func: Callable[[HttpRequest], Any]) -> Callable[[HttpRequest], Any]:
        return func


class _Limiter:
    """The project's limits, from settings.RATEWARDEN (read on first use, again when a test overrides it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gate: Optional[Gate] = None
        self._key: Any = None
        self._routes: Dict[Any, Route] = {}
        # The middleware's per view: None (no limit) or (route, the view's own @limit wrapper or None).
        self.views: Dict[Any, Optional[Tuple[Route, Any]]] = {}

    @property
    def gate(self) -> Gate:
        gate = self._gate
        if gate is None:
            with self._lock:
                if self._gate is None:
                    self._gate, self._key = _read_settings()
                    self._routes = {}
                    self.views = {}
                gate = self._gate
        return gate

    def forget(self) -> None:
        with self._lock:
            self._gate = None

    def route(self, key: Any, build: Callable[[Gate, Any], Route]) -> Route:
        gate = self.gate
        route = self._routes.get(key)
        if route is None:
            route = self._routes[key] = build(gate, self._key)
        return route


limiter = _Limiter()


def _read_settings() -> Tuple[Gate, Any]:
    config = dict(getattr(settings, "RATEWARDEN", {}) or {})
    if not isinstance(config, dict):
        raise ImproperlyConfigured("settings.RATEWARDEN must be a dict")
    key = config.pop("KEY", None)
    values: Dict[str, Any] = {}
    for name, value in config.items():
        option = name.lower()
        if name != name.upper() or option not in OPTIONS:
            raise ImproperlyConfigured(f"settings.RATEWARDEN: unknown option {name!r} (options: KEY, "
                                       f"{', '.join(o.upper() for o in OPTIONS)})")
        if option in ("skip", "refusal") and isinstance(value, str) and "." in value:
            value = import_string(value)
        values[option] = value
    if isinstance(key, str):
        key = import_string(key)
    try:
        options = Options.read(values, lambda name: f"settings.RATEWARDEN[{name.upper()!r}]")
    except (TypeError, ValueError) as error:
        raise ImproperlyConfigured(str(error)) from None
    return Gate(options, _Access), key


def _on_setting_changed(setting: str, **kwargs: Any) -> None:
    if setting == "RATEWARDEN":
        limiter.forget()


setting_changed.connect(_on_setting_changed)


def _view_name(view: Any) -> str:
    """A view's name in the fields."""
    return getattr(view, "__name__", None) or type(view).__name__


def _url_route(request: HttpRequest) -> Optional[str]:
    """The URL pattern that resolved the request (``api/users/<int:pk>/``, its includes' prefixes with it), whose
    name (_route_name) the view's limits count under; None for a view called without resolving a URL."""
    match = getattr(request, "resolver_match", None)
    return getattr(match, "route", None)


def _route_id(view: Any, url_route: Optional[str]) -> str:
    if url_route is not None:
        return route_name(url_route)
    return f"{getattr(view, '__module__', '')}.{getattr(view, '__qualname__', _view_name(view))}"


def _answer(gate: Gate, request: HttpRequest, checked: Checked) -> Optional[HttpResponse]:
    """The 400 or 429 of a check, or None when the request goes on."""
    if checked.key_error is not None:
        status, body, content_type = key_rejection(checked.key_error)
        return HttpResponse(body, status=status, content_type=content_type)
    if checked.refused < 0:
        return None
    refusal = gate.refusal(checked, with_fields=False)  # added with every check's, by _add_fields
    handler = gate.options.refusal
    if callable(handler):
        return handler(request, refusal)
    response = HttpResponse(refusal.body, status=refusal.status, content_type=refusal.content_type)
    # Not one django.request warning per refused request: a flood of refusals would flood the log (the Gate counts
    # them: stats()).
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


def _add_fields(gate: Gate, checks: List[Checked], response: HttpResponse) -> HttpResponse:
    headers = response.headers
    # Our fields are ASCII, so what ResponseHeaders.__setitem__ would store is known: stored without its charset
    # checks (about 1 µs a field), where the mapping is the one Django has had since 3.2.
    store = getattr(headers, "_store", None)
    if not isinstance(store, dict):
        store = None
    for name, value in gate.fields_of(checks):
        if name == "Retry-After" and name in headers:  # an app's own 429 keeps its Retry-After
            continue
        if store is not None:
            lower = _LOWER.get(name)
            if lower is None:
                lower = _LOWER[name] = name.lower()
            store[lower] = (name, value)
        else:
            headers[name] = value
    return response


_LOWER: Dict[str, str] = {}  # the few field names fields_of gives


def stats() -> Dict[str, int]:
    """``refused``, ``shadow_refused``, ``store_failures``, ``key_failures``, ``allow_listed``, ``deny_listed``,
    ``blocked`` since start, in this process."""
    return limiter.gate.stats()


def limit(policy: str, **kw: Any) -> Callable[[F], F]:
    """View decorator: ``policy`` per key. Keywords: ``key`` (a function of the request or a ``keys`` part),
    ``cost``, ``methods``, ``algorithm``, ``burst``, ``on_store_error``, ``scope``, ``shadow``, ``count_when`` (as
    Flask's).
    Several on one view all apply, top to bottom. For a class-based view, decorate ``as_view()``'s result, or use
    ``method_decorator(limit(...), name="dispatch")``."""
    spec = LimitSpec.make(policy, name=kw.get("scope"), **kw)

    def decorator(view: F) -> F:
        if isinstance(view, type):
            raise TypeError("limit() on a class: decorate MyView.as_view() or use method_decorator(limit(...), "
                            "name='dispatch')")
        inner = getattr(view, _LIMITS, None)
        if inner is not None and getattr(view, "_ratewarden_view", None) in wrapped_chain(view):
            # Stacked @limit: one wrapper checks them all, in declaration order. (Only a wrapper this one calls: one
            # whose attributes were merely copied, as on method_decorator's per-request method, checks nothing here.)
            inner.insert(0, spec)
            return view
        specs = [spec]
        name = _view_name(view)
        # What the route is cached by: method_decorator(limit(...), name="dispatch") decorates a new bound method on
        # every request, so neither that method nor this wrapper lasts; its function and the specs do.
        origin = getattr(view, "__wrapped__", view)

        def route_of(request: HttpRequest) -> Optional[Route]:
            """The limits to check here, or None: the middleware checked them with the app's, or none apply."""
            if getattr(request, "_ratewarden_view", None) is limited and hasattr(request, "_ratewarden"):
                return None
            gate = limiter.gate
            if not gate.options.enabled or (gate.skip is not None and gate.skip(request)):
                return None
            url_route = _url_route(request)
            return limiter.route((tuple(specs), origin, url_route),
                                 lambda g, key: g.route(specs, name, _route_id(view, url_route), key, app_wide=False))

        def answered(request: HttpRequest, checked: Optional[Checked], response: HttpResponse) -> HttpResponse:
            checks: Optional[List[Checked]] = getattr(request, "_ratewarden", None)
            if checked is None:
                return response
            if checks is not None:  # the middleware adds every field at once, and settles
                checks.append(checked)
                return response
            return _add_fields(limiter.gate, [checked], response)

        if iscoroutinefunction(view):  # an async view (ASGI): decided through ahit, on the event loop
            @functools.wraps(view)
            async def limited(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
                route = route_of(request)
                if route is None:
                    return await view(request, *args, **kwargs)
                gate, method = limiter.gate, request.method or "GET"
                checked = gate.check(route, request, method) if route.sync else await gate.acheck(route, request,
                                                                                                  method)
                answer = _answer(gate, request, checked) if checked is not None else None
                if inspect.isawaitable(answer):
                    answer = await answer
                response = answer if answer is not None else await view(request, *args, **kwargs)
                if checked is not None and checked.charged and not hasattr(request, "_ratewarden"):
                    await gate.asettle(checked, response.status_code)
                return answered(request, checked, response)
        else:
            @functools.wraps(view)
            def limited(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
                route = route_of(request)
                if route is None:
                    return view(request, *args, **kwargs)
                gate = limiter.gate
                checked = gate.check(route, request, request.method or "GET")
                answer = _answer(gate, request, checked) if checked is not None else None
                response = answer if answer is not None else view(request, *args, **kwargs)
                if checked is not None and checked.charged and not hasattr(request, "_ratewarden"):
                    gate.settle(checked, response.status_code)
                return answered(request, checked, response)

        setattr(limited, _LIMITS, specs)
        limited._ratewarden_view = limited  # type: ignore[attr-defined]
        return limited  # type: ignore[return-value]

    return decorator


def shared_limit(policy: str, scope: str, **kw: Any) -> Callable[[F], F]:
    """:func:`limit` counted once for every view with the same ``scope``."""
    return limit(policy, scope=scope, **kw)


def exempt(view: F) -> F:
    """The view has no app-wide or default limit."""
    setattr(view, _EXEMPT, True)
    return view


class RateLimitMiddleware:
    """Applies the app-wide limit and, to views without limits of their own, the default one; checks a decorated
    view's limits with them (one set of fields); adds the fields to every response.

    Synchronous under WSGI; under ASGI a coroutine throughout (Django's handler is then asynchronous): the store is
    asked through ``ahit``, never from a thread of the pool."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)
            self.process_view = self._aprocess_view  # type: ignore[method-assign]
        limiter.gate  # a bad setting fails when the server starts, not on a request

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        checks: List[Checked] = []
        request._ratewarden = checks  # type: ignore[attr-defined]
        response = self.get_response(request)
        if checks:
            gate = limiter.gate
            for checked in checks:
                if checked.charged:
                    gate.settle(checked, response.status_code)
            _add_fields(gate, checks, response)
        return response

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        checks: List[Checked] = []
        request._ratewarden = checks  # type: ignore[attr-defined]
        response = await self.get_response(request)
        if checks:
            gate = limiter.gate
            for checked in checks:
                if checked.charged:
                    await gate.asettle(checked, response.status_code)
            _add_fields(gate, checks, response)
        return response

    @staticmethod
    def _route(request: HttpRequest, view: Any) -> Optional[Route]:
        """The route the middleware checks for ``view`` (resolved once per view), or None."""
        gate = limiter.gate
        if not gate.options.enabled:
            return None
        url_route = _url_route(request)
        found = limiter.views.get((view, url_route), _UNSEEN)
        if found is _UNSEEN:
            found = limiter.views[(view, url_route)] = _view_route(gate, view, url_route)
        if found is None or (gate.skip is not None and gate.skip(request)):
            return None
        route, own = found
        if own is not None:
            request._ratewarden_view = own  # type: ignore[attr-defined]  # its @limit: checked here
        return route

    def process_view(self, request: HttpRequest, view: Any, args: Any, kwargs: Any) -> Optional[HttpResponse]:
        route = self._route(request, view)
        if route is None:
            return None
        gate = limiter.gate
        checked = gate.check(route, request, request.method or "GET")
        if checked is None:
            return None
        request._ratewarden.append(checked)  # type: ignore[attr-defined]
        return _answer(gate, request, checked)

    async def _aprocess_view(self, request: HttpRequest, view: Any, args: Any, kwargs: Any) -> Optional[HttpResponse]:
        route = self._route(request, view)
        if route is None:
            return None
        gate = limiter.gate
        method = request.method or "GET"
        checked = gate.check(route, request, method) if route.sync else await gate.acheck(route, request, method)
        if checked is None:
            return None
        request._ratewarden.append(checked)  # type: ignore[attr-defined]
        answer = _answer(gate, request, checked)
        return await answer if inspect.isawaitable(answer) else answer


_UNSEEN = object()


def _view_route(gate: Gate, view: Any, url_route: Optional[str]) -> Optional[Tuple[Route, Any]]:
    own = getattr(view, _LIMITS, None)
    exempt = getattr(view, _EXEMPT, False)
    if exempt and own is None:
        return None
    checker = getattr(view, "_ratewarden_view", None) if own is not None else None
    if checker is not None and checker not in wrapped_chain(view):
        # Limits the view only carries: as_view() copies them from a dispatch that method_decorator(limit(...),
        # name="dispatch") decorates on each request, and that decoration checks them. Here only the app-wide limit.
        own, checker = [], None
    name, rid = _view_name(view), _route_id(view, url_route)
    specs = own if own is not None else ([gate.default_spec] if gate.default_spec is not None else [])
    route = limiter.route((view, url_route, "middleware"),
                          lambda g, key: g.route(specs, name, rid, key, app_wide=not exempt))
    if not route.checks:
        return None
    return route, checker
