"""A limited route's ASGI app (``RouteApp``): its limits checked once the router has found it, before its own
handle — a plain route's (Route.plain) decided in one store call, without a Request, others through the Gate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable, List, Optional

from starlette.requests import Request
from starlette.responses import Response

from ._asgi_readers import Scope, maybe_await
from ._asgi_send import allowed_sender_for, fields_sender_for, replay
from ._errors import StoreError
from ._http import Checked, Route, key_rejection
from ._native import Decision

if TYPE_CHECKING:
    from .asgi import RateLimiter

__all__ = ["SCOPE_KEY", "ASGIApp", "RouteApp"]

ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]

SCOPE_KEY = "ratewarden"  # scope[SCOPE_KEY]: the Checked of each check made on the request


class RouteApp:
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
        checks: Optional[List[Checked]] = scope.get(SCOPE_KEY)
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
            return self.app(scope, receive, allowed_sender_for(self.gate, self.route.fields.raw_allowed(decision), send))
        checked = self.gate.decided(self.route, decision, error)
        checks = scope[SCOPE_KEY] = [checked]
        send = fields_sender_for(self.gate, checks, send)
        if checked.refused >= 0:
            return self._refuse(scope, receive, send, Request(scope, receive), checked)
        return self.app(scope, receive, send)

    def _general(self, scope: Scope, receive: Any, send: Any, checks: Optional[List[Checked]]) -> Awaitable[None]:
        if checks is None:  # not under the middleware's send (a sub-app's route): this app adds the fields
            checks = scope[SCOPE_KEY] = []
            send = fields_sender_for(self.gate, checks, send)
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
            if gate.skip is None or not await maybe_await(gate.skip(request)):
                if route.needs_form:
                    # The body is read for the key, then given again to the endpoint.
                    body = await request.body()
                    scope["ratewarden.form"] = await request.form()
                    receive = replay(body, receive)
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
