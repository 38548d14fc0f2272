"""What the HTTP layer reads of a request, framework-neutral: the client address key from an adapter's readers of
its peer address and X-Forwarded-For (``address_reader``), a key function's value as a key (``key_text``), and the
functions a decorated view wraps (``wrapped_chain``).

An adapter supplies its readers as an ``access`` object (see ``Gate``): ``address_key(options)``, ``header(req,
name)``, ``user(req)``, ``form(req, name)`` and ``call(func)``, which turns a user's function (key, cost, skip) into
a function of the request."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Union

from ._client_key import client_key
from ._http_options import Options

__all__ = ["address_of", "address_reader", "key_text", "list_key", "prefixed_key", "wrapped_chain"]


def address_of(peer: Optional[str], forwarded: Sequence[str], proxy_count: int, ipv6_subnet: int) -> str:
    """The client address key: ``peer``, or with ``proxy_count = N`` proxies the Nth X-Forwarded-For value from the
    right (what the outermost proxy saw, which a client cannot forge); a request that did not cross N proxies keeps
    the peer. ``forwarded``: the X-Forwarded-For field lines. IPv6 masked to ``ipv6_subnet`` bits."""
    address = peer or ""
    if proxy_count:
        hops = [v.strip() for v in ",".join(forwarded).split(",") if v.strip()]
        if len(hops) >= proxy_count:
            address = hops[-proxy_count]
    if ":" not in address:  # IPv4 (or no address at all): as is, without a call
        return address
    return client_key(address, ipv6_subnet)


def address_reader(options: Options, peer: Callable[[Any], Optional[str]],
                   forwarded: Callable[[Any], Sequence[str]]) -> Callable[[Any], str]:
    """The client address key of a request as ``options`` say (``address_of``), from the adapter's readers of its
    peer address and of its X-Forwarded-For field lines (read only behind proxies)."""
    proxies, subnet = options.proxy_count, options.ipv6_subnet
    if proxies:
        return lambda req: address_of(peer(req), forwarded(req), proxies, subnet)

    def key(req: Any) -> str:
        address = peer(req) or ""
        return address if ":" not in address else client_key(address, subnet)

    return key


def wrapped_chain(f: Any) -> List[Any]:
    """``f`` and what it wraps (functools.wraps sets ``__wrapped__``): a decorator above ``@limit`` hides nothing."""
    out = []
    while f is not None and len(out) < 100:
        out.append(f)
        f = getattr(f, "__wrapped__", None)
    return out


def key_text(value: Any) -> Union[str, bytes]:
    """What a key function returned, as a key: a str or bytes as is, an int (not a bool) in decimal, any object
    whose class defines its own ``__str__`` (a UUID, an IP address) as that; else a TypeError saying why."""
    if isinstance(value, (str, bytes)):
        if not value:
            raise ValueError("the key function returned an empty key")
        return value
    if isinstance(value, bool) or value is None:
        raise TypeError(f"the key function returned {value!r}, which names no client")
    if isinstance(value, int):
        return str(value)
    if type(value).__str__ is not object.__str__:
        text = str(value)
        if text:
            return text
    raise TypeError(f"the key function returned a {type(value).__name__}, which has no clear text form: return a "
                    "str, bytes, int, or an object with its own __str__")


def prefixed_key(prefix: str, raw: Any) -> Union[str, bytes]:
    """A limit's storage key: its prefix and what key_text made of the key function's value."""
    key = key_text(raw)
    return prefix + key if isinstance(key, str) else prefix.encode() + key


def list_key(raw: Any) -> Union[str, bytes]:
    """A client key as the lists take it: what key_text made of the key function's value."""
    return raw if isinstance(raw, (str, bytes)) else key_text(raw)
