"""How ratewarden.asgi reads a request: the readers the HTTP layer asks for (``Access``, of a Starlette
``Request``) and the client address of a scope, which a plain route's short path reads without making a Request."""

from __future__ import annotations

import inspect
from typing import Any, Callable, List, MutableMapping, Optional

from starlette import requests as starlette_requests
from starlette.requests import Request

from ._http import Options, address_reader
from .keys import KeyPart

__all__ = ["Access", "Scope", "maybe_await", "require_form_parser", "scope_address_reader"]

Scope = MutableMapping[str, Any]


class Access:
    """How the HTTP layer reads a Starlette ``Request``; a user's functions take the request (and may be async)."""

    @staticmethod
    def address_key(options: Options) -> Callable[[Request], str]:
        address = scope_address_reader(options)

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


def scope_address_reader(options: Options) -> Callable[[Scope], str]:
    """The client address of a request, read from its scope (the proxy count and the IPv6 subnet applied)."""
    return address_reader(options, _scope_peer, _scope_forwarded)


def _scope_peer(scope: Scope) -> str:
    client = scope.get("client")
    return client[0] if client else ""


def _scope_forwarded(scope: Scope) -> List[str]:
    return [v.decode("latin-1") for k, v in scope["headers"] if k == b"x-forwarded-for"]


def require_form_parser(key: Any) -> None:
    """A form key needs Starlette's form parser, python-multipart: without it every request would fail (500) and go
    unlimited, so its absence is an error where the limit is declared, at start-up."""
    if isinstance(key, KeyPart) and key.needs_form and starlette_requests.parse_options_header is None:
        raise ImportError(f"{key!r} reads the request's form, which Starlette parses with python-multipart: it is not "
                          "installed (pip install 'ratewarden[fastapi]' or 'ratewarden[asgi]' brings it, or pip "
                          "install python-multipart)")


async def maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value
