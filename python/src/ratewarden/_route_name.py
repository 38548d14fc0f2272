"""The name a route's limits count under (``<name>:<key>``), the same in every adapter of every language: the route's
path template as its framework writes it, with each parameter written ``:name`` — Flask's ``/users/<int:id>``,
Starlette's ``/users/{id:int}``, Django's ``users/<int:id>/`` or ``^users/(?P<id>[0-9]+)/$``, Express's and
Fastify's ``/users/:id(\\d+)`` all name ``/users/:id``. A trailing ``/`` is dropped (``/login/`` is ``/login``).
node/lib/route_name.js is its twin; both run tests/conformance/route_names.json."""

from __future__ import annotations

_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _group_end(text: str, i: int) -> int:
    """The index after the regex group that opens at ``text[i] == "("``: nested groups, escapes and classes."""
    depth, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = text.find("]", i + 2 if text[i + 1:i + 2] == "]" else i + 1)
            if i < 0:
                return n
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def route_name(template: str) -> str:
    t = template
    if t.startswith("^"):
        t = t[1:]
    for end in ("\\Z", "$"):
        if t.endswith(end):
            t = t[:-len(end)]
    out = []
    i, n = 0, len(t)
    while i < n:
        c = t[i]
        close = {"<": ">", "{": "}"}.get(c)
        if close is not None and t.find(close, i) > i + 1:
            inner = t[i + 1:t.find(close, i)]
            name = inner.rsplit(":", 1)[-1] if c == "<" else inner.split(":", 1)[0]
            if name and all(ch in _WORD for ch in name):  # <int:id>, <id>, {id}, {id:int}
                out.append(":" + name)
                i += len(inner) + 2
                continue
        if c == "(":
            end = _group_end(t, i)
            if t.startswith("(?P<", i) and t.find(">", i) > i + 4:  # a named regex group
                out.append(":" + t[i + 4:t.find(">", i)])
            elif not (out and out[-1].startswith(":")):  # an unnamed group; after :id it only constrains :id
                out.append(":_")
            i = end
            continue
        if c == ":" and i + 1 < n and t[i + 1] in _WORD:  # :id
            j = i + 1
            while j < n and t[j] in _WORD:
                j += 1
            out.append(t[i:j])
            i = j
            continue
        if c == "\\" and i + 1 < n:  # an escaped character of a regex route
            c = t[i + 1]
            i += 1
        out.append(c)
        i += 1
    name = "".join(out)
    if not name.startswith("/"):
        name = "/" + name
    if len(name) > 1 and name.endswith("/"):
        name = name[:-1]
    return name
