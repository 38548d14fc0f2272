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
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.http import HttpRequest, HttpResponse
from django.utils.module_loading import import_string

from ._client_key import client_key
from ._http import OPTIONS, Checked, Gate, LimitSpec, Options, Route, address_of, key_rejection

__all__ = ["RateLimitMiddleware", "exempt", "limit", "limiter", "shared_limit", "stats"]

F = TypeVar("F", bound=Callable[..., Any])

_LIMITS = "_ratewarden_limits"  # on a decorated view: its LimitSpecs (functools.wraps carries it up)
_EXEMPT = "_ratewarden_exempt"


class _Access:
    """How the HTTP layer reads a Django ``HttpRequest``; a user's functions take the request."""

    @staticmethod
    def address_key(options: Options) -> Callable[[HttpRequest], str]:
        proxies, subnet = options.proxy_count, options.ipv6_subnet
        if proxies:
            return lambda req: address_of(req.META.get("REMOTE_ADDR"), [req.META.get("HTTP_X_FORWARDED_FOR", "")],
                                          proxies, subnet)

        def peer(req: HttpRequest) -> str:
            address = req.META.get("REMOTE_ADDR") or ""
            return address if ":" not in address else client_key(address, subnet)

        return peer

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

    @property
    def gate(self) -> Gate:
        gate = self._gate
        if gate is None:
            with self._lock:
                if self._gate is None:
                    self._gate, self._key = _read_settings()
                    self._routes = {}
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
    except ValueError as error:
        raise ImproperlyConfigured(str(error)) from None
    return Gate(options, _Access), key


def _on_setting_changed(setting: str, **kwargs: Any) -> None:
    if setting == "RATEWARDEN":
        limiter.forget()


setting_changed.connect(_on_setting_changed)


def _view_name(view: Any) -> Tuple[str, str]:
    """The name in the fields and the count's id of a view."""
    name = getattr(view, "__name__", None) or type(view).__name__
    return name, f"{getattr(view, '__module__', '')}.{getattr(view, '__qualname__', name)}"


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
    for name, value in gate.fields_of(checks):
        if name != "Retry-After" or name not in response.headers:  # an app's own 429 keeps its Retry-After
            response.headers[name] = value
    return response


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
        if inner is not None and getattr(view, "_ratewarden_view", None) is not None:
            # Stacked @limit: one wrapper checks them all, in declaration order.
            inner.insert(0, spec)
            return view
        specs = [spec]
        name, rid = _view_name(view)

        @functools.wraps(view)
        def limited(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            checks: Optional[List[Checked]] = getattr(request, "_ratewarden", None)
            if checks is not None and getattr(request, "_ratewarden_view", None) is limited:
                return view(request, *args, **kwargs)  # the middleware checked these limits with the app's
            gate = limiter.gate
            if not gate.options.enabled or (gate.skip is not None and gate.skip(request)):
                return view(request, *args, **kwargs)
            route = limiter.route((limited, rid), lambda g, key: g.route(specs, name, rid, key, app_wide=False))
            checked = gate.check(route, request, request.method or "GET")
            own = [checked] if checked is not None else []
            answer = _answer(gate, request, checked) if checked is not None else None
            response = answer if answer is not None else view(request, *args, **kwargs)
            if checks is not None:  # the middleware adds every field at once, and settles
                checks.extend(own)
                return response
            if own and own[0].charged:
                gate.settle(own[0], response.status_code)
            return _add_fields(gate, own, response) if own else response

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
    view's limits with them (one set of fields); adds the fields to every response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        limiter.gate  # a bad setting fails when the server starts, not on a request

    def __call__(self, request: HttpRequest) -> HttpResponse:
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

    def process_view(self, request: HttpRequest, view: Any, args: Any, kwargs: Any) -> Optional[HttpResponse]:
        gate = limiter.gate
        if not gate.options.enabled:
            return None
        own = getattr(view, _LIMITS, None)
        if getattr(view, _EXEMPT, False) and own is None:
            return None
        name, rid = _view_name(view)

        def build(g: Gate, key: Any) -> Route:
            specs = own if own is not None else ([g.default_spec] if g.default_spec is not None else [])
            return g.route(specs, name, rid, key, app_wide=not getattr(view, _EXEMPT, False))

        route = limiter.route((view, "middleware"), build)
        if not route.checks or (gate.skip is not None and gate.skip(request)):
            return None
        if own is not None:
            request._ratewarden_view = getattr(view, "_ratewarden_view", None)  # type: ignore[attr-defined]
        checked = gate.check(route, request, request.method or "GET")
        if checked is None:
            return None
        request._ratewarden.append(checked)  # type: ignore[attr-defined]
        return _answer(gate, request, checked)
