"""Rate-limit keys from any part of a request, for every adapter (``ratewarden.flask``, ``ratewarden.asgi``,
``ratewarden.django``): give one of these as a limit's ``key`` (or the adapter's default ``key``).

    keys.address()                          # the client address (proxy_count, ipv6_subnet of the adapter's options)
    keys.header("X-API-Key")                # a request header
    keys.user()                             # the authenticated user's id
    keys.form("username")                   # a form field (the login example)
    keys.combine(keys.user(), keys.address())   # several parts, all required, joined by "|"
    keys.first(keys.user(), keys.address())     # the first part the request has

A part the request does not have (no such header, nobody logged in, no such field) gives no key: the adapter's
``on_key_error`` applies, and the reason is logged.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

__all__ = ["KeyPart", "NoKey", "address", "combine", "first", "form", "header", "user"]


class NoKey(LookupError):
    """The request has no value for a key part; the message says which."""


class KeyPart:
    """A recipe for a key. ``bind(access, options)`` gives a function of the adapter's request that returns the key
    (a ``str``) or raises :class:`NoKey`; ``access`` is the adapter's way of reading its requests."""

    needs_form = False  # the ASGI adapter reads the body before a form key can be read

    def bind(self, access: Any, options: Any) -> Callable[[Any], str]:
        raise NotImplementedError


class _Address(KeyPart):
    def bind(self, access: Any, options: Any) -> Callable[[Any], str]:
        return access.address_key(options)

    def __repr__(self) -> str:
        return "keys.address()"


class _Header(KeyPart):
    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"keys.header needs a header name, got {name!r}")
        self.name = name

    def bind(self, access: Any, options: Any) -> Callable[[Any], str]:
        read, name = access.header, self.name

        def key(req: Any) -> str:
            value = read(req, name)
            if not value:
                raise NoKey(f"no {name} header")
            return value

        return key

    def __repr__(self) -> str:
        return f"keys.header({self.name!r})"


class _User(KeyPart):
    def bind(self, access: Any, options: Any) -> Callable[[Any], str]:
        read = access.user

        def key(req: Any) -> str:
            value = read(req)
            if value is None or value == "":
                raise NoKey("no authenticated user")
            return str(value)

        return key

    def __repr__(self) -> str:
        return "keys.user()"


class _Form(KeyPart):
    needs_form = True

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"keys.form needs a field name, got {name!r}")
        self.name = name

    def bind(self, access: Any, options: Any) -> Callable[[Any], str]:
        read, name = access.form, self.name

        def key(req: Any) -> str:
            value = read(req, name)
            if not value:
                raise NoKey(f"no {name!r} form field")
            return value

        return key

    def __repr__(self) -> str:
        return f"keys.form({self.name!r})"


class _Combined(KeyPart):
    def __init__(self, parts: Sequence[KeyPart], all_parts: bool) -> None:
        if not parts or not all(isinstance(p, KeyPart) for p in parts):
            raise TypeError("keys.combine and keys.first take key parts (keys.address(), keys.header(...), ...)")
        self.parts = tuple(parts)
        self.all_parts = all_parts
        self.needs_form = any(p.needs_form for p in parts)

    def bind(self, access: Any, options: Any) -> Callable[[Any], str]:
        funcs = [p.bind(access, options) for p in self.parts]
        if self.all_parts:
            # "|" between parts, each escaped, so that ("a|b", "c") and ("a", "b|c") stay two keys.
            return lambda req: "|".join(f(req).replace("\\", "\\\\").replace("|", "\\|") for f in funcs)

        def key(req: Any) -> str:
            reasons = []
            for f in funcs:
                try:
                    return f(req)
                except NoKey as missing:
                    reasons.append(str(missing))
            raise NoKey(", ".join(reasons))

        return key

    def __repr__(self) -> str:
        return f"keys.{'combine' if self.all_parts else 'first'}({', '.join(map(repr, self.parts))})"


def address() -> KeyPart:
    """The client address: the peer, or behind ``proxy_count`` proxies the address the outermost one saw; IPv6 masked
    to ``ipv6_subnet`` bits (see ``ratewarden._client_key``)."""
    return _Address()


def header(name: str) -> KeyPart:
    """The value of the request header ``name`` (e.g. an API key)."""
    return _Header(name)


def user() -> KeyPart:
    """The authenticated user's id: Django's ``request.user.pk``, Starlette's ``request.user.identity`` (or its
    ``display_name``), Flask-Login's ``current_user.get_id()`` or else ``flask.g.user``."""
    return _User()


def form(name: str) -> KeyPart:
    """The form field ``name`` of a url-encoded or multipart body."""
    return _Form(name)


def combine(*parts: KeyPart) -> KeyPart:
    """Every part, joined by ``|``: e.g. one count per (user, address). No key if one part is missing."""
    return _Combined(parts, True)


def first(*parts: KeyPart) -> KeyPart:
    """The first part the request has: e.g. the user when logged in, else the address."""
    return _Combined(parts, False)

