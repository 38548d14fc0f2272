"""What ratewarden.asgi puts between an app and its server: a ``send`` that adds the rate-limit fields to the
response's start (and settles count_when's refunds once the response is sent), and a ``receive`` that gives a body
read for a form key again."""

from __future__ import annotations

from typing import Any, Awaitable, List, Tuple

from ._http import RATE_LIMIT_FIELDS, Checked, Gate

__all__ = ["allowed_sender_for", "fields_sender_for", "replay", "with_fields"]


def fields_sender_for(gate: Gate, checks: List[Checked], send: Any) -> Any:
    """The ``send`` of a limited request: adds the fields of the limits it met (``checks``, which depends() may still
    extend) to the response's start and, once the response is sent, gives back what count_when does not count (a
    refund never delays the response). A closure, not an object: it is made for every request; and not a coroutine
    but what ``send`` returns, but for the message after which a refund is due."""
    status = 0  # the response's, while a check has a hit to settle

    def fields_sender(message: Any) -> Awaitable[None]:
        nonlocal status
        if message["type"] == "http.response.start":
            if checks:
                fields = gate.raw_fields(checks)
                if fields:
                    message["headers"] = with_fields(gate, message.get("headers", ()), fields)
                if gate.settles:
                    for checked in checks:
                        if checked.charged:  # settled once the response is sent (below)
                            status = message["status"]
                            break
        elif status and not message.get("more_body", False):
            settled, status = status, 0
            return send_and_settle(gate, checks, send, message, settled)
        return send(message)

    return fields_sender


def allowed_sender_for(gate: Gate, fields: List[Tuple[bytes, bytes]], send: Any) -> Any:
    """The ``send`` of a request a plain route allowed: ``fields`` added to the response's start."""

    def allowed_sender(message: Any) -> Awaitable[None]:
        if message["type"] == "http.response.start":
            message["headers"] = with_fields(gate, message.get("headers", ()), fields)
        return send(message)

    return allowed_sender


async def send_and_settle(gate: Gate, checks: List[Checked], send: Any, message: Any, status: int) -> None:
    await send(message)
    for checked in checks:
        if checked.charged:
            await gate.asettle(checked, status)


def with_fields(gate: Gate, headers: Any, fields: List[Tuple[bytes, bytes]]) -> List[Tuple[bytes, bytes]]:
    """An app's headers with ours: its own fields of these names are replaced, but for its Retry-After."""
    if headers.__class__ is not list:
        headers = list(headers)
    lengths, names = gate.raw_field_lengths, gate.raw_field_names
    for h in headers:
        if len(h[0]) in lengths and h[0].lower() in names:
            break
    else:  # the usual response: none of ours
        return headers + fields
    out = [h for h in headers if h[0].lower() not in _REPLACED]
    for field in fields:
        if field[0] == b"Retry-After" and any(h[0].lower() == b"retry-after" for h in out):
            continue
        out.append(field)
    return out


_REPLACED = frozenset(n.encode() for n in RATE_LIMIT_FIELDS)


def replay(body: bytes, receive: Any) -> Any:
    """A receive that gives ``body`` once, then what ``receive`` gives (a disconnect)."""
    sent = False

    async def replayed() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
