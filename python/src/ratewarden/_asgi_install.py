"""How ratewarden.asgi finds an app's routes and wraps those with limits (``RouteInstaller``, a part of
``RateLimiter``): routers, mounts, hosts and FastAPI's includes walked, each limited route's handle wrapped in a
``RouteApp``, again when a router's routes change."""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Dict, List, Tuple

from starlette import routing
from starlette.routing import Host, Mount

from ._asgi_route import RouteApp
from ._http import Gate, LimitSpec, wrapped_chain
from ._route_name import route_name

__all__ = ["RouteInstaller", "route_dependencies"]


class RouteInstaller:
    """The part of ``RateLimiter`` that installs its limits in an app's routers."""

    gate: Gate
    key: Any
    outer_fields: bool
    _limits: Dict[Any, List[LimitSpec]]
    _exempt: set
    _dependencies: set
    _watched: Dict[int, List[Tuple[Any, int]]]
    _lock: threading.Lock

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
            router.default = RouteApp(self, self.gate.route([], "not_found", "@not_found", self.key), router.default,
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
                       any(d.call in self._dependencies for d in route_dependencies(app_route)), path)

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
            app_route.handle = RouteApp(self, route, app_route.handle, has_dependency,
                                         getattr(app_route, "methods", None))


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


def _include_prefix(branch: Any) -> str:
    """The path an include of FastAPI's adds to the routes of the router it includes."""
    return getattr(getattr(branch, "include_context", None), "prefix", "") or ""


def route_dependencies(route: Any) -> List[Any]:
    """A FastAPI route's dependencies, nested ones included, in declaration order (depth first)."""
    out: List[Any] = []

    def walk(dependant: Any) -> None:
        for dep in getattr(dependant, "dependencies", ()):
            out.append(dep)
            walk(dep)

    walk(getattr(route, "dependant", None))
    return out
