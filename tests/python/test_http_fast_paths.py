"""The short cuts the HTTP adapters take on every request give what the general path gives: the encoded fields of
an allowed request (asgi), and a response that already has fields of ours (asgi, Flask) — replaced, but for the
app's own Retry-After. (The adapters over real HTTP: test_adapters.py, test_flask.py.)"""

from __future__ import annotations

import asyncio
import random
import socket
import uuid
from typing import Any, Dict, List, Sequence, Tuple

import pytest
from flask import Flask

import ratewarden
from ratewarden import asgi
from ratewarden._asgi_send import with_fields
from ratewarden._headers import Fields, Quota
from ratewarden.flask import RateLimiter


@pytest.mark.parametrize("name", ["login", 'a "quoted" \\ name'])
def test_encoded_fields_of_an_allowed_request_are_the_general_ones(name: str) -> None:
    rng = random.Random(7)
    fields = Fields([[Quota(name, 100, 60_000_000)]], "draft-8", False)
    assert fields.raw_allowed is not None
    for _ in range(2000):
        reset = rng.choice([0, 1, 999_999, 1_000_000, 1_000_001, rng.randrange(10**12)])
        d = ratewarden.Decision(allowed=True, limit=100, remaining=rng.randrange(101), reset_after_us=reset,
                                retry_after_us=0, used=rng.randrange(101))
        general = [(n.encode(), v.encode()) for n, v in fields([d], 0)]
        assert fields.raw_allowed(d) == general


def test_no_encoded_short_cut_where_the_fields_differ() -> None:
    assert Fields([[Quota("a", 1, 1)]], "draft-7", False).raw_allowed is None
    assert Fields([[Quota("a", 1, 1)]], "draft-8", True).raw_allowed is None  # legacy X-RateLimit-*
    assert Fields([[Quota("a", 1, 1), Quota("b", 2, 2)]], "draft-8", False).raw_allowed is None
    assert Fields([[Quota("a", 1, 1)], [Quota("b", 2, 2)]], "draft-8", False).raw_allowed is None


def test_asgi_response_fields_replace_the_apps_but_its_retry_after() -> None:
    gate = asgi.RateLimiter(store="memory://").gate
    ours = [(b"RateLimit-Policy", b'"x";q=1;w=60'), (b"RateLimit", b'"x";r=0;t=60'), (b"Retry-After", b"60")]
    plain = [(b"content-type", b"text/plain"), (b"content-length", b"2")]
    assert with_fields(gate, plain, ours) == plain + ours
    app_own = [(b"RateLimit", b"old"), (b"content-type", b"text/plain"), (b"Retry-After", b"5"),
               (b"x-ratelimit-remaining", b"9")]
    expected = [(b"content-type", b"text/plain"), (b"Retry-After", b"5"), (b"RateLimit-Policy", b'"x";q=1;w=60'),
                (b"RateLimit", b'"x";r=0;t=60')]
    assert with_fields(gate, app_own, ours) == expected
    for own in ([(b"RATELIMIT-POLICY", b"old")], [(b"content-type", b"text/plain"), (b"ratelimit", b"old")]):
        assert with_fields(gate, own, ours[:2]) == [h for h in own if h[0] == b"content-type"] + ours[:2]
    assert with_fields(gate, [(b"retry-after", b"5")], ours) == [(b"retry-after", b"5")] + ours[:2]
    assert with_fields(gate, (h for h in plain), ours[:2]) == plain + ours[:2]  # any iterable of headers


def _asgi_get(app: Any, path: str, client: str = "127.0.0.1",
              headers: Sequence[Tuple[bytes, bytes]] = ()) -> Tuple[int, Dict[str, str]]:
    """The status and fields of one GET through ``app``, called in process."""
    status, fields, _ = _asgi_call(app, path, client, headers)
    return status, fields


def _asgi_call(app: Any, path: str, client: str,
               headers: Sequence[Tuple[bytes, bytes]]) -> Tuple[int, Dict[str, str], bytes]:
    messages: List[Dict[str, Any]] = []

    async def receive() -> Dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Dict[str, Any]) -> None:
        messages.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"", "headers": list(headers),
             "client": (client, 5000), "server": ("127.0.0.1", 8000)}
    asyncio.run(app(scope, receive, send))
    return (messages[0]["status"], {k.decode().lower(): v.decode() for k, v in messages[0]["headers"]},
            b"".join(m.get("body", b"") for m in messages[1:]))


@pytest.mark.parametrize("on_key_error", ["reject", "skip"])
def test_asgi_a_bad_cost_is_the_apps_error_not_a_key_failure(on_key_error: str) -> None:
    """A cost the core refuses is the app's bug: a 500 through the app's error handling (its exception, with the
    core's message), not a key failure (400, or with on_key_error="skip" no limit at all)."""
    from fastapi import FastAPI, Request
    from fastapi.responses import PlainTextResponse

    app = FastAPI()
    limiter = asgi.RateLimiter(app, store="memory://", prefix=f"bad-cost-{uuid.uuid4().hex[:8]}",
                               on_key_error=on_key_error)
    costs = iter([9, 0, -1, "2", 2])

    @app.get("/upload")
    @limiter.limit("5/minute", cost=lambda request: next(costs))
    async def upload(request: Request) -> str:
        return "ok"

    @app.exception_handler(Exception)
    async def failed(request: Request, error: Exception) -> PlainTextResponse:
        return PlainTextResponse(f"{type(error).__name__}: {error}", status_code=500)

    for says in ("InvalidArgumentError: cost must be between 1 and 5", "cost must be between 1",
                 "cost must be between 1", "TypeError"):
        with pytest.raises(Exception) as caught:  # Starlette answers with the handler, then raises it again
            _asgi_call(app, "/upload", "127.0.0.1", [])
        assert says in f"{type(caught.value).__name__}: {caught.value}"
    assert _asgi_get(app, "/upload")[1]["ratelimit"] == '"upload";r=3;t=60'
    assert limiter.stats()["key_failures"] == 0


@pytest.mark.parametrize("options", [{}, {"shadow": True}, {"refusal": "problem"}, {"proxy_count": 1},
                                     {"ipv6_subnet": 64}],
                         ids=["plain", "shadow", "problem", "proxy", "ipv6"])
def test_asgi_short_path_of_a_plain_route_is_the_general_path(options: Dict[str, Any], store_url: str) -> None:
    """A route of one limit by client address decides on a short path: the same answers, fields and counts as
    the general path (taken here by an app whose route has the short path turned off), on either kind of store."""
    _compare_short_and_general_paths(store_url, options)


@pytest.mark.parametrize("on_store_error", ["allow", "deny"])
def test_asgi_short_path_when_the_store_fails(on_store_error: str) -> None:
    with socket.socket() as s:  # a port nobody listens on: every call fails at once
        s.bind(("127.0.0.1", 0))
        dead = f"redis://127.0.0.1:{s.getsockname()[1]}?timeout=200ms&connect_timeout=200ms"
    answers = _compare_short_and_general_paths(dead, {"on_store_error": on_store_error})
    if on_store_error == "allow":
        assert all(a[0] == 200 and a[1]["ratelimit-skipped"] == "store-unavailable" for a in answers)
    else:
        assert all(a[0] == 429 and "ratelimit" not in a[1] for a in answers)


def _compare_short_and_general_paths(store_url: str,
                                     options: Dict[str, Any]) -> List[Tuple[int, Dict[str, str], bytes]]:
    """The answers of the short path, each checked against the general path's."""
    from fastapi import FastAPI
    from fastapi.responses import PlainTextResponse

    apps = []
    run = uuid.uuid4().hex
    for short in (True, False):
        app = FastAPI()
        limiter = asgi.RateLimiter(app, store=store_url, prefix=f"short-{short}-{run}", **options)

        @app.get("/r")
        @limiter.limit("3/minute")
        async def r() -> PlainTextResponse:
            return PlainTextResponse("ok", headers={"RateLimit": "the app's own"} if short else None)

        _asgi_call(app, "/other", "192.0.2.1", [])  # installs the limits
        route_app = next(route.handle for route in app.router.routes if getattr(route, "path", "") == "/r")
        assert route_app.plain is not None
        if not short:
            route_app.plain = None
        apps.append(app)
    clients = [("192.0.2.7", []), ("2001:db8::1", []), ("2001:db8::2", []),
               ("192.0.2.8", [(b"x-forwarded-for", b"198.51.100.1")])]
    answers = []
    for _ in range(5):
        for client, headers in clients:
            short, general = (_asgi_call(app, "/r", client, headers) for app in apps)
            assert short == general
            answers.append(short)
    assert apps[0].user_middleware[0].kwargs["limiter"].stats() == apps[1].user_middleware[0].kwargs["limiter"].stats()
    return answers


def test_asgi_fields_on_what_the_exception_handlers_answer() -> None:
    """A limited route whose endpoint raises gets the fields on the answer of the app's exception handler, whether
    the route answers it (a function's route: the middleware only installs) or the app's exception middleware does
    (an endpoint class: the middleware adds the fields), and a 404 counted by the app-wide limit has them."""
    from fastapi import FastAPI
    from starlette.endpoints import HTTPEndpoint
    from starlette.exceptions import HTTPException

    app = FastAPI()
    limiter = asgi.RateLimiter(app, store="memory://", prefix="http-fast-paths-errors")

    @app.get("/teapot")
    @limiter.limit("5/minute")
    async def teapot() -> None:
        raise HTTPException(418, headers={"X-Own": "1"})

    status, fields = _asgi_get(app, "/teapot")
    assert (status, fields["x-own"], fields["ratelimit-policy"], fields["ratelimit"]) == \
        (418, "1", '"teapot";q=5;w=60', '"teapot";r=4;t=60')
    assert limiter.outer_fields is False

    @limiter.limit("5/minute")
    class Teapot(HTTPEndpoint):
        async def get(self, request: Any) -> None:
            raise HTTPException(418)

    app.add_route("/class", Teapot)
    status, fields = _asgi_get(app, "/class")
    assert (status, fields["ratelimit"]) == (418, '"Teapot";r=4;t=60')
    assert limiter.outer_fields is True
    assert _asgi_get(app, "/teapot")[1]["ratelimit"] == '"teapot";r=3;t=60'  # once, from the route

    wide = FastAPI()
    asgi.RateLimiter(wide, store="memory://", prefix="http-fast-paths-404", application="5/minute")
    status, fields = _asgi_get(wide, "/nothing")
    assert (status, fields["ratelimit"]) == (404, '"application";r=4;t=60')


def test_flask_response_fields_replace_the_apps_but_its_retry_after() -> None:
    app = Flask(__name__)
    limiter = RateLimiter(app, store="memory://", prefix="http-fast-paths")

    @app.route("/plain")
    @limiter.limit("2/minute")
    def plain() -> str:
        return "ok"

    @app.route("/own")
    @limiter.limit("2/minute")
    def own() -> tuple:
        return "ok", 200, [("ratelimit", "old"), ("Retry-After", "5"), ("X-Other", "1")]

    client = app.test_client()
    answer = client.get("/plain")
    assert answer.headers.getlist("RateLimit") == ['"plain";r=1;t=60']
    assert [name for name, _ in answer.headers].count("RateLimit-Policy") == 1
    answer = client.get("/own")
    assert answer.headers.getlist("RateLimit") == ['"own";r=1;t=60']
    assert answer.headers.getlist("Retry-After") == ["5"] and answer.headers["X-Other"] == "1"
