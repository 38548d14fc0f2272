"""ratewarden.flask over real HTTP: each app is served by a threaded werkzeug server on 127.0.0.1."""

from __future__ import annotations

import http.client
import itertools
import json
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Tuple
from urllib.parse import urlencode

import pytest
from flask import Flask, request
from werkzeug.serving import make_server

import ratewarden
from ratewarden.flask import RateLimiter, RateLimitExceeded, client_address
from redis_server import RedisServer

_prefixes = itertools.count()


class Client:
    def __init__(self, port: int) -> None:
        self.port = port

    def request(
        self, method: str, path: str, form: Optional[Dict[str, str]] = None, headers: Optional[Dict[str, str]] = None
    ) -> Tuple[int, http.client.HTTPMessage, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        body = urlencode(form) if form is not None else None
        hdrs = dict(headers or {})
        if body is not None:
            hdrs["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body=body, headers=hdrs)
        response = conn.getresponse()
        result = (response.status, response.headers, response.read().decode())
        conn.close()
        return result

    def get(self, path: str, **kw: Any) -> Tuple[int, http.client.HTTPMessage, str]:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> Tuple[int, http.client.HTTPMessage, str]:
        return self.request("POST", path, **kw)


@contextmanager
def serve(app: Flask) -> Iterator[Client]:
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Client(server.server_port)
    finally:
        server.shutdown()
        thread.join()


def make_app(**config: Any) -> Flask:
    app = Flask(__name__)
    app.config["RATEWARDEN_PREFIX"] = f"flask{next(_prefixes)}"  # every test starts from empty counts
    app.config.update(config)
    return app


def login_app(**config: Any) -> Tuple[Flask, RateLimiter]:
    """The seed scenario: 5 login attempts per username per minute."""
    app = make_app(**config)
    limiter = RateLimiter(app)

    @app.post("/login")
    @limiter.limit("5/minute", key=lambda: request.form["username"])
    def login() -> str:
        return "welcome"

    return app, limiter


def test_login_limit_per_username_with_exact_headers() -> None:
    app, _ = login_app()
    with serve(app) as client:
        for i in range(5):
            status, headers, body = client.post("/login", form={"username": "alice"})
            assert (status, body) == (200, "welcome")
            assert headers["RateLimit-Policy"] == '"login";q=5;w=60'
            assert headers["RateLimit"] == f'"login";r={4 - i};t=60'
            assert "Retry-After" not in headers and "X-RateLimit-Limit" not in headers
        status, headers, body = client.post("/login", form={"username": "alice"})
        assert status == 429
        assert headers["Retry-After"] == "60"
        assert headers["RateLimit"] == '"login";r=0;t=60'
        assert headers["Content-Type"] == "text/plain; charset=utf-8"
        assert body == "429 Too Many Requests: 5/minute exceeded; retry in 60 s\n"
        assert client.post("/login", form={"username": "bob"})[0] == 200  # another key


def test_several_policies_name_the_one_the_core_reports(store_url: str) -> None:
    # Issue 12: 5 hits, then one 1.5 s later. The 1-second window has restarted (9 left) and the 2-second one has 4
    # left: the decision reports the 2-second policy (policy_index 1), and the RateLimit field names it.
    clock = ratewarden.TestClock(1_702_080_000_000_000)
    app = make_app(RATEWARDEN_STORE=ratewarden.Store(store_url, test_clock=clock))
    limiter = RateLimiter(app)

    @app.get("/search")
    @limiter.limit("10/second; 10 per 2 seconds")
    def search() -> str:
        return "ok"

    with serve(app) as client:
        fields = [client.get("/search")[1]["RateLimit"] for _ in range(5)]
        assert fields == [f'"search-1";r={r};t=1' for r in (9, 8, 7, 6, 5)]  # ties: the first policy
        clock.now_us += 1_500_000
        status, headers, _ = client.get("/search")
        assert status == 200
        assert headers["RateLimit-Policy"] == '"search-1";q=10;w=1, "search-2";q=10;w=2'
        assert headers["RateLimit"] == '"search-2";r=4;t=1'


def test_header_styles() -> None:
    for style, expected in [
        ("draft-7", {"RateLimit-Policy": "5;w=60", "RateLimit": "limit=5, remaining=4, reset=60"}),
        ("draft-6", {"RateLimit-Policy": "5;w=60", "RateLimit-Limit": "5", "RateLimit-Remaining": "4",
                     "RateLimit-Reset": "60"}),
        (False, {}),
    ]:
        app, _ = login_app(RATEWARDEN_HEADERS=style)
        with serve(app) as client:
            _, headers, _ = client.post("/login", form={"username": "alice"})
            got = {k: v for k, v in headers.items() if k.lower().startswith(("ratelimit", "x-ratelimit"))}
            assert got == expected, style


def test_legacy_headers() -> None:
    app, _ = login_app(RATEWARDEN_LEGACY_HEADERS=True)
    with serve(app) as client:
        before = int(time.time())
        _, headers, _ = client.post("/login", form={"username": "alice"})
        assert headers["X-RateLimit-Limit"] == "5"
        assert headers["X-RateLimit-Remaining"] == "4"
        assert before + 60 <= int(headers["X-RateLimit-Reset"]) <= int(time.time()) + 61


def test_key_failure_gives_400_by_default_and_is_configurable() -> None:
    app, limiter = login_app()
    with serve(app) as client:
        status, headers, body = client.post("/login", form={})
        no_key = json.loads((Path(__file__).parents[1] / "conformance" / "refusals.json").read_text())["no_key"]
        assert (status, headers["content-type"], body) == (no_key["status"], no_key["content_type"], no_key["body"])
        assert limiter.stats(app)["key_failures"] == 1
        assert client.post("/login", form={"username": ""})[0] == 400  # an empty key is no key
        assert client.post("/login", form={"username": "x" * 5000})[0] == 400  # too long for the store
    app, _ = login_app(RATEWARDEN_ON_KEY_ERROR="skip")
    with serve(app) as client:
        status, headers, _ = client.post("/login", form={})
        assert status == 200 and "RateLimit" not in headers
    app, _ = login_app(RATEWARDEN_ON_KEY_ERROR="raise")
    with serve(app) as client:
        assert client.post("/login", form={})[0] == 400  # the key function's own BadRequestKeyError


def test_several_limits_on_one_route() -> None:
    app = make_app()
    limiter = RateLimiter(app)

    @app.post("/login")
    @limiter.limit("3/minute", key=lambda: request.form["username"])
    @limiter.limit("4/minute")  # per client address
    def login() -> str:
        return "ok"

    with serve(app) as client:
        statuses = [client.post("/login", form={"username": "alice"})[0] for _ in range(4)]
        assert statuses == [200, 200, 200, 429]  # the username limit
        status, headers, _ = client.post("/login", form={"username": "bob"})
        assert status == 200
        assert headers["RateLimit-Policy"] == '"login-1";q=3;w=60, "login-2";q=4;w=60'
        assert headers["RateLimit"] == '"login-1";r=2;t=60, "login-2";r=0;t=60'
        status, headers, _ = client.post("/login", form={"username": "carol"})
        assert status == 429  # the address limit: 4 allowed (the refused alice attempt charged it too)
        assert headers["RateLimit"] == '"login-1";r=2;t=60, "login-2";r=0;t=60'


def test_default_limit_exempt_and_shared() -> None:
    app = make_app(RATEWARDEN_DEFAULT="2/minute")
    limiter = RateLimiter(app)

    @app.get("/a")
    def a() -> str:
        return "a"

    @app.get("/b")
    def b() -> str:
        return "b"

    @app.get("/health")
    @limiter.exempt
    def health() -> str:
        return "ok"

    @app.get("/s1")
    @limiter.shared_limit("3/minute", scope="search")
    def s1() -> str:
        return "s1"

    @app.get("/s2")
    @limiter.shared_limit("3/minute", scope="search")
    def s2() -> str:
        return "s2"

    with serve(app) as client:
        assert [client.get("/a")[0] for _ in range(3)] == [200, 200, 429]
        status, headers, _ = client.get("/b")  # the default limit counts each route apart
        assert status == 200 and headers["RateLimit-Policy"] == '"default";q=2;w=60'
        for _ in range(5):
            status, headers, _ = client.get("/health")
            assert status == 200 and "RateLimit" not in headers
        assert [client.get(p)[0] for p in ("/s1", "/s2", "/s1", "/s2")] == [200, 200, 200, 429]
        assert client.get("/s1")[1]["RateLimit-Policy"] == '"search";q=3;w=60'


def test_methods_cost_and_disabled() -> None:
    app = make_app()
    limiter = RateLimiter(app)

    @app.route("/upload", methods=["GET", "POST"])
    @limiter.limit("10/minute", methods=["post"], cost=lambda: int(request.form.get("files", "1")))
    def upload() -> str:
        return "ok"

    with serve(app) as client:
        for _ in range(3):
            assert "RateLimit" not in client.get("/upload")[1]  # GET is not limited
        assert client.post("/upload", form={"files": "7"})[1]["RateLimit"] == '"upload";r=3;t=60'
        assert client.post("/upload", form={"files": "4"})[0] == 429
    app, _ = login_app(RATEWARDEN_ENABLED=False)
    with serve(app) as client:
        assert all(client.post("/login", form={"username": "x"})[0] == 200 for _ in range(7))


@pytest.mark.parametrize("on_key_error", ["reject", "skip"])
def test_a_bad_cost_is_the_apps_error_not_a_key_failure(on_key_error: str) -> None:
    # A cost the core refuses (above the capacity, below 1, not an int) or a cost function that fails is the app's
    # bug: a 500 through Flask's error handling with the error's message, never a 400 "no key" (nor, with
    # on_key_error="skip", a request let through unlimited), and not counted as a key failure.
    app = make_app(RATEWARDEN_ON_KEY_ERROR=on_key_error)
    limiter = RateLimiter(app)

    @app.get("/upload")
    @limiter.limit("5/minute", cost=lambda: json.loads(request.args["n"]))
    def upload() -> str:
        return "ok"

    @app.errorhandler(Exception)
    def failed(error: Exception) -> Tuple[str, int]:
        return f"{type(error).__name__}: {error}", 500

    with serve(app) as client:
        for n, says in (("9", "InvalidArgumentError: cost must be between 1 and 5"), ("0", "cost must be between 1"),
                        ("-1", "cost must be between 1"), ('"2"', "TypeError"), ("", "JSONDecodeError")):
            status, _, body = client.get(f"/upload?{urlencode({'n': n})}")
            assert status == 500 and says in body, (n, body)
        assert client.get("/upload?n=2")[1]["RateLimit"] == '"upload";r=3;t=60'
    assert limiter.stats(app)["key_failures"] == 0


def test_custom_429_handler_keeps_retry_after() -> None:
    app, _ = login_app()

    @app.errorhandler(RateLimitExceeded)
    def too_many(error: RateLimitExceeded) -> Tuple[Dict[str, Any], int]:
        assert error.decision is not None
        return {"error": "slow down", "retry_after": error.decision.retry_after}, 429

    with serve(app) as client:
        for _ in range(5):
            client.post("/login", form={"username": "alice"})
        status, headers, body = client.post("/login", form={"username": "alice"})
        assert status == 429 and '"slow down"' in body
        assert headers["Retry-After"] == "60" and headers["RateLimit"] == '"login";r=0;t=60'


@pytest.mark.parametrize("style, legacy", [(True, False), ("draft-6", True)])
def test_refusal_is_the_exceptions_response_without_its_machinery(style: Any, legacy: bool) -> None:
    # Without an error handler, a refusal is answered in before_request; with one that gives the exception back,
    # Flask renders RateLimitExceeded itself. The two answers are the same.
    answers = []
    for handled in (False, True):
        app, _ = login_app(RATEWARDEN_HEADERS=style, RATEWARDEN_LEGACY_HEADERS=legacy)
        if handled:
            app.errorhandler(RateLimitExceeded)(lambda error: error)
        with serve(app) as client:
            for _ in range(5):
                client.post("/login", form={"username": "alice"})
            status, headers, body = client.post("/login", form={"username": "alice"})
        fields = sorted((k, v) for k, v in headers.items() if k not in ("Date", "Server", "Connection"))
        if legacy:  # Unix time, in whole seconds: the two requests may fall on either side of a second
            fields = [(k, v) for k, v in fields if k != "X-RateLimit-Reset"]
        answers.append((status, fields, body))
    assert answers[0] == answers[1]
    assert answers[0][0] == 429 and ("Retry-After", "60") in answers[0][1]


def test_every_kind_of_error_handler_still_gets_the_refusal() -> None:
    from flask import Blueprint
    from werkzeug.exceptions import HTTPException

    for register in (
        lambda app, bp, h: app.errorhandler(429)(h),
        lambda app, bp, h: app.errorhandler(HTTPException)(h),
        lambda app, bp, h: app.errorhandler(Exception)(h),
        lambda app, bp, h: bp.errorhandler(RateLimitExceeded)(h),
    ):
        app = make_app()
        limiter = RateLimiter(app)
        bp = Blueprint("bp", __name__)

        @bp.get("/login")
        @limiter.limit("1/minute")
        def login() -> str:
            return "ok"

        register(app, bp, lambda error: ("handled", 429))
        app.register_blueprint(bp)
        with serve(app) as client:
            assert client.get("/login")[0] == 200
            status, headers, body = client.get("/login")
            assert (status, body, headers["Retry-After"]) == (429, "handled", "60")
    # TRAP_HTTP_EXCEPTIONS: the exception goes up, as Flask does with every HTTP exception then.
    app, _ = login_app(TRAP_HTTP_EXCEPTIONS=True, TESTING=True)
    client = app.test_client()
    for _ in range(5):
        client.post("/login", data={"username": "alice"})
    with pytest.raises(RateLimitExceeded):
        client.post("/login", data={"username": "alice"})


def test_client_address_behind_proxies() -> None:
    app = make_app(RATEWARDEN_PROXY_COUNT=2)
    RateLimiter(app)

    @app.get("/whoami")
    def whoami() -> str:
        return client_address()

    with serve(app) as client:
        assert client.get("/whoami")[2] == "127.0.0.1"  # did not come through the proxies
        forged = {"X-Forwarded-For": "6.6.6.6, 203.0.113.9, 10.0.0.2"}
        assert client.get("/whoami", headers=forged)[2] == "203.0.113.9"
        v6 = {"X-Forwarded-For": "2001:db8:1:2ff:3:4:5:6, 10.0.0.2"}
        assert client.get("/whoami", headers=v6)[2] == "2001:db8:1:200::/56"
        mapped = {"X-Forwarded-For": "::ffff:203.0.113.9, 10.0.0.2"}
        assert client.get("/whoami", headers=mapped)[2] == "203.0.113.9"
    app.config["RATEWARDEN_IPV6_SUBNET"] = 64
    with serve(app) as client:
        assert client.get("/whoami", headers=v6)[2] == "2001:db8:1:2ff::/64"


@pytest.mark.parametrize(
    "on_store_error, expected",
    [
        # Fail open: no quota the limiter did not compute, and a field that says the limit was skipped.
        ("allow", (200, None, None, "store-unavailable")),
        ("deny", (429, "1", None, None)),  # fail closed: retry in min(period, 1 s)
        ("raise", (500, None, None, None)),
    ],
)
def test_store_failure(
    own_redis: RedisServer, on_store_error: str, expected: Tuple[int, Optional[str], Optional[str], Optional[str]]
) -> None:
    app, limiter = login_app(
        RATEWARDEN_STORE=own_redis.url + "?timeout=200ms&connect_timeout=200ms",
        RATEWARDEN_ON_STORE_ERROR=on_store_error,
    )
    with serve(app) as client:
        status, headers, _ = client.post("/login", form={"username": "alice"})
        assert status == 200 and headers["RateLimit"] == '"login";r=4;t=60'
        own_redis.kill()
        status, headers, _ = client.post("/login", form={"username": "alice"})
        assert (status, headers.get("Retry-After"), headers.get("RateLimit"),
                headers.get("RateLimit-Skipped")) == expected
    assert limiter.stats(app) == {"refused": 0, "shadow_refused": 0, "store_failures": 1, "key_failures": 0,
                                  "allow_listed": 0, "deny_listed": 0, "blocked": 0}


def test_default_is_fail_open(own_redis: RedisServer) -> None:
    app = make_app(RATEWARDEN_STORE=own_redis.url + "?timeout=200ms&connect_timeout=200ms")
    limiter = RateLimiter(app)
    assert app.config["RATEWARDEN_ON_STORE_ERROR"] == "allow"

    @app.get("/")
    @limiter.limit("1/minute")
    def index() -> str:
        return "ok"

    own_redis.kill()
    with serve(app) as client:
        assert [client.get("/")[0] for _ in range(3)] == [200, 200, 200]


def test_shared_across_apps_through_redis(redis: RedisServer) -> None:
    # Two apps (two processes in production) on one Redis enforce one limit.
    prefix = f"flask-redis{next(_prefixes)}"
    apps = [login_app(RATEWARDEN_STORE=redis.url, RATEWARDEN_PREFIX=prefix)[0] for _ in range(2)]
    with serve(apps[0]) as first, serve(apps[1]) as second:
        statuses = [c.post("/login", form={"username": "eve"})[0] for c in (first, second) * 3]
        assert statuses == [200] * 5 + [429]


def test_init_app_and_bad_configuration() -> None:
    limiter = RateLimiter(default="1/minute")
    app = make_app()
    limiter.init_app(app)
    assert app.extensions["ratewarden"] is limiter
    with pytest.raises(ValueError):
        RateLimiter(make_app(RATEWARDEN_ON_STORE_ERROR="maybe"))
    with pytest.raises(ValueError):
        RateLimiter(make_app(RATEWARDEN_DEFAULT="1/fortnight"))
    with pytest.raises(ValueError):
        limiter.limit("often")
    with pytest.raises(ValueError, match="on_store_error"):
        limiter.limit("1/minute", on_store_error="maybe")
    with pytest.raises(ValueError, match="RATEWARDEN_HEADERS"):
        RateLimiter(make_app(RATEWARDEN_HEADERS="draft-9"))
    with pytest.raises(ValueError, match="RATEWARDEN_IPV6_SUBNET must be an integer between 8 and 128"):
        RateLimiter(make_app(RATEWARDEN_IPV6_SUBNET=200))


def test_method_views_limits_land_where_written(store_url: str) -> None:
    # Issue 18: a limit in MethodView.decorators landed on another view; @limit on a method was ignored.
    from flask.views import MethodView

    app = make_app(RATEWARDEN_STORE=store_url)
    limiter = RateLimiter(app)

    class Items(MethodView):
        decorators = [limiter.limit("2/minute")]

        def get(self) -> str:
            return "items"

    class Login(MethodView):
        def get(self) -> str:
            return "form"

        @limiter.limit("1/minute")
        def post(self) -> str:
            return "welcome"

    class Other(MethodView):  # same module, no limits: must stay unlimited
        def get(self) -> str:
            return "other"

    app.add_url_rule("/items", view_func=Items.as_view("items"))
    app.add_url_rule("/login", view_func=Login.as_view("login"))
    app.add_url_rule("/other", view_func=Other.as_view("other"))
    with serve(app) as client:
        assert [client.get("/items")[0] for _ in range(3)] == [200, 200, 429]
        assert all(client.get("/login")[0] == 200 for _ in range(3))  # GET: no limit
        status, headers, _ = client.post("/login")
        assert status == 200 and headers["RateLimit"] == '"login";r=0;t=60'
        assert client.post("/login")[0] == 429
        for _ in range(4):
            status, headers, _ = client.get("/other")
            assert status == 200 and "RateLimit" not in headers


def test_exempt_blueprint_and_application_limit(store_url: str) -> None:
    from flask import Blueprint

    app = make_app(RATEWARDEN_STORE=store_url, RATEWARDEN_APPLICATION="5/minute", RATEWARDEN_DEFAULT="3/minute")
    limiter = RateLimiter(app)
    internal = Blueprint("internal", __name__)

    @internal.get("/metrics")
    def metrics() -> str:
        return "metrics"

    @internal.get("/reindex")
    @limiter.limit("1/minute")  # written on the view: still applies
    def reindex() -> str:
        return "reindex"

    @app.get("/a")
    def a() -> str:
        return "a"

    @app.get("/b")
    def b() -> str:
        return "b"

    limiter.exempt(internal)
    app.register_blueprint(internal)
    with serve(app) as client:
        for _ in range(8):
            status, headers, _ = client.get("/metrics")
            assert status == 200 and "RateLimit" not in headers
        assert [client.get("/reindex")[0] for _ in range(2)] == [200, 429]
        status, headers, _ = client.get("/a")
        assert headers["RateLimit-Policy"] == '"application";q=5;w=60, "default";q=3;w=60'
        assert headers["RateLimit"] == '"application";r=4;t=60, "default";r=2;t=60'
        assert [client.get(p)[0] for p in ("/a", "/a", "/a")] == [200, 200, 429]  # the default, per route
        assert [client.get("/b")[0] for _ in range(2)] == [200, 429]  # app-wide: 5 counted over both routes
    with pytest.raises(TypeError, match="Blueprint"):
        limiter.limit("1/minute")(internal)


def test_two_like_limits_count_apart_on_every_store(store_url: str) -> None:
    # Issue 18: two limits with the same policy and key on one route each count the request once, on every store.
    app = make_app(RATEWARDEN_STORE=store_url)
    limiter = RateLimiter(app)

    @app.get("/x")
    @limiter.limit("2/minute")
    @limiter.limit("2/minute")
    def x() -> str:
        return "x"

    with serve(app) as client:
        assert [client.get("/x")[0] for _ in range(3)] == [200, 200, 429]


def test_key_function_returning_an_int_and_refusal_handler() -> None:
    app = make_app(RATEWARDEN_REFUSAL=lambda req, refusal: ({"retry": refusal.retry_after,
                                                              "policy": refusal.name}, 429))
    limiter = RateLimiter(app)

    @app.get("/user/<int:n>")
    @limiter.limit("1/minute", key=lambda: request.view_args["n"])
    def user(n: int) -> str:
        return str(n)

    with serve(app) as client:
        assert client.get("/user/7")[0] == 200
        status, headers, body = client.get("/user/7")
        assert status == 429 and headers["Retry-After"] == "60" and '"policy":"user"' in body.replace(" ", "")
        assert client.get("/user/8")[0] == 200
