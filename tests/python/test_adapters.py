"""Every HTTP adapter over real HTTP on 127.0.0.1 under its usual server — FastAPI and Starlette under uvicorn, Django
and Flask under gunicorn, and Django under uvicorn as an ASGI app (django-asgi) — on the memory store and on Redis, with the same routes (tests/python/apps) and the same
expectations: one option set, one behaviour."""

from __future__ import annotations

import http.client
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple
from urllib.parse import urlencode

import pytest

from gate_proxy import GateProxy
from redis_server import RedisServer, free_port, wait_listening

APPS = Path(__file__).with_name("apps")
REFUSALS = json.loads((Path(__file__).parents[1] / "conformance" / "refusals.json").read_text())
ADAPTERS = ["fastapi", "starlette", "django", "django-asgi", "flask"]
_prefixes = itertools.count()
_clients = itertools.count(1)

Answer = Tuple[int, Dict[str, str], str]


class Server:
    def __init__(self, port: int, log: Path, process: "subprocess.Popen[bytes]") -> None:
        self.port = port
        self.log = log
        self.process = process

    def request(self, method: str, path: str, form: Optional[Dict[str, str]] = None,
                headers: Optional[Dict[str, str]] = None) -> Answer:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        body = urlencode(form) if form is not None else None
        hdrs = dict(headers or {})
        if body is not None:
            hdrs["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body=body, headers=hdrs)
        response = conn.getresponse()
        answer = (response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode())
        conn.close()
        return answer

    def get(self, path: str, client: Optional[str] = None, **kw: Any) -> Answer:
        if client is not None:
            kw["headers"] = {**kw.get("headers", {}), "X-Forwarded-For": client}
        return self.request("GET", path, **kw)

    def log_lines(self, text: str) -> List[str]:
        return [line for line in self.log.read_text(errors="replace").splitlines() if text in line]

    def logged(self, text: str) -> List[str]:
        """The log's lines with ``text``, once there is one (an app logs before it answers; its server's output may
        reach the file later)."""
        deadline = time.monotonic() + 30
        while not self.log_lines(text) and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.log_lines(text)


@contextmanager
def serve(adapter: str, store: str, options: Optional[Dict[str, Any]] = None, workers: int = 1,
          extra_env: Optional[Dict[str, str]] = None) -> Iterator[Server]:
    """The test app of ``adapter`` under its server, on a free port; stopped (its whole process group) after."""
    port = free_port()
    env = {**os.environ, "RW_TEST_STORE": store, "RW_TEST_PREFIX": f"adapters{os.getpid()}-{next(_prefixes)}",
           "RW_TEST_OPTIONS": json.dumps({"proxy_count": 1, **(options or {})}), "PYTHONPATH": str(APPS),
           **(extra_env or {})}
    bind = ["-b", f"127.0.0.1:{port}", "--chdir", str(APPS)]
    if adapter in ("fastapi", "starlette", "django-asgi"):
        env["RW_APP"] = adapter
        env["DJANGO_SETTINGS_MODULE"] = "django_app"
        app = "django_app:asgi_application" if adapter == "django-asgi" else "asgi_app:app"
        cmd = [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port),
               "--app-dir", str(APPS), "--log-level", "warning", "--workers", str(workers)]
    else:
        module = "django_app:application" if adapter == "django" else "flask_gunicorn_app:app"
        env["DJANGO_SETTINGS_MODULE"] = "django_app"
        cmd = [sys.executable, "-m", "gunicorn", "-w", str(workers), "-k", "gthread", "--threads", "8", *bind,
               module]
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        with log.open("wb") as out:
            process = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_listening(port, process, log, adapter)
            yield Server(port, log, process)
        finally:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:  # the test stopped it
                pass
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def client() -> str:
    """A client address of its own for each use (the apps trust one proxy: X-Forwarded-For names the client)."""
    n = next(_clients)
    return f"10.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


@pytest.fixture(scope="module", params=[(a, s) for a in ADAPTERS for s in ("memory", "redis")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    """The app of one adapter with its route limits only; Redis: two worker processes sharing the counts."""
    adapter, store = request.param
    url = "memory://" if store == "memory" else request.getfixturevalue("redis").url
    with serve(adapter, url, workers=1 if store == "memory" else 2) as s:
        yield s


def test_route_limit_per_form_field(server: Server) -> None:
    for i in range(5):
        status, headers, body = server.request("POST", "/login", form={"username": "alice"})
        assert (status, body) == (200, "welcome")
        assert headers["ratelimit-policy"] == '"login";q=5;w=60'
        assert headers["ratelimit"] == f'"login";r={4 - i};t=60'
        assert "retry-after" not in headers
    status, headers, body = server.request("POST", "/login", form={"username": "alice"})
    assert status == 429
    assert headers["retry-after"] == "60" and headers["ratelimit"] == '"login";r=0;t=60'
    assert headers["content-type"].startswith("text/plain")
    assert body == "429 Too Many Requests: 5/minute exceeded; retry in 60 s\n"
    assert server.request("POST", "/login", form={"username": "bob"})[0] == 200


def test_int_key_and_ipv6_subnets(server: Server) -> None:
    base = next(_clients) * 10
    assert [server.get(f"/user/{base}")[0] for _ in range(3)] == [200, 200, 429]  # a key function returning an int
    assert server.get(f"/user/{base + 1}")[0] == 200
    prefix = f"2001:db8:{next(_clients):x}"
    assert [server.get("/items", client=f"{prefix}:0001::1")[0] for _ in range(3)] == [200] * 3
    assert server.get("/items", client=f"{prefix}:00ff::9")[0] == 429  # the same /56
    assert server.get("/items", client=f"{prefix}:0100::1")[0] == 200  # another /56


def test_each_limit_counts_on_its_own_unless_shared(server: Server) -> None:
    me = client()
    # Two 2/minute limits on one route, same key: each counts the request once (a shared count would refuse the 2nd).
    answers = [server.get("/twice", client=me) for _ in range(3)]
    assert [a[0] for a in answers] == [200, 200, 429]
    assert answers[1][1]["ratelimit-policy"] == '"twice-1";q=2;w=60, "twice-2";q=2;w=60'
    assert answers[1][1]["ratelimit"] == '"twice-1";r=0;t=60, "twice-2";r=0;t=60'
    assert [server.get(p, client=me)[0] for p in ("/s1", "/s2", "/s1", "/s2")] == [200, 200, 200, 429]
    status, headers, _ = server.get("/s1", client=me)
    assert headers["ratelimit-policy"] == '"search";q=3;w=60'


def test_routes_without_limits(server: Server) -> None:
    for path in ("/free", "/health"):
        status, headers, body = server.get(path)
        assert status == 200 and not any(k.startswith("ratelimit") for k in headers), (path, headers)


def test_bad_keys_are_rejected_and_logged_without_flooding(server: Server) -> None:
    assert server.request("POST", "/login", form={})[0] == 400
    assert server.request("POST", "/login", form={"username": ""})[0] == 400
    status, headers, body = server.get("/api", headers={"X-API-Key": "k" * 5000})  # too long for the store
    no_key = REFUSALS["no_key"]
    assert (status, headers["content-type"], body) == (no_key["status"], no_key["content_type"], no_key["body"])
    assert server.get("/api")[0] == 400  # no key header
    for _ in range(40):
        server.request("POST", "/login", form={})
    lines = server.logged("ratewarden: no key for rate limit")
    assert 1 <= len(lines) <= 4, lines  # at most one line per 10 s per worker
    assert any("username" in line for line in lines), lines  # it says why


def test_thousands_of_distinct_keys_concurrently(server: Server) -> None:
    run = next(_clients)

    def call(i: int) -> Tuple[int, str]:
        status, headers, _ = server.get("/api", headers={"X-API-Key": f"key-{run}-{i}"})
        return status, headers.get("ratelimit", "")

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(call, range(2000)))
    assert answers == [(200, '"api";r=99999;t=60')] * 2000


def test_concurrent_requests_on_one_key_admit_exactly_the_limit(server: Server) -> None:
    me = client()
    with ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(lambda _: server.get("/items", client=me)[0], range(40)))
    assert sorted(statuses) == [200] * 3 + [429] * 37


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_app_wide_and_default_limits(adapter: str) -> None:
    with serve(adapter, "memory://", {"application": "8/minute", "default": "2/minute"}) as s:
        me = client()
        status, headers, _ = s.get("/free", client=me)
        assert status == 200
        assert headers["ratelimit-policy"] == '"application";q=8;w=60, "default";q=2;w=60'
        assert headers["ratelimit"] == '"application";r=7;t=60, "default";r=1;t=60'
        assert [s.get("/free", client=me)[0] for _ in range(2)] == [200, 429]  # the default limit, per route
        status, headers, _ = s.get("/items", client=me)  # its own limit, not the default one
        assert status == 200 and headers["ratelimit"] == '"application";r=4;t=60, "items";r=2;t=60'
        assert [s.get("/items", client=me)[0] for _ in range(2)] == [200, 200]
        assert [s.get(p, client=me)[0] for p in ("/s1", "/s2")] == [200, 200]  # 8 app-wide (the refused /free too)
        status, headers, _ = s.get("/s1", client=me)
        assert status == 429 and headers["ratelimit"] == '"application";r=0;t=60' and headers["retry-after"] == "60"
        assert all(s.get("/health", client=me)[0] == 200 for _ in range(3))  # exempt from both


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_disabled(adapter: str) -> None:
    with serve(adapter, "memory://", {"enabled": False, "application": "1/minute"}) as s:
        me = client()
        for _ in range(3):
            for answer in (s.get("/items", client=me), s.request("POST", "/login", form={"username": "a"})):
                assert answer[0] == 200 and not any(k.startswith("ratelimit") for k in answer[1]), answer


@pytest.mark.parametrize("adapter", ["fastapi", "starlette"])
def test_asgi_404s_mounts_and_routers_added_later(adapter: str) -> None:
    with serve(adapter, "memory://", {"application": "8/minute", "default": "2/minute"}) as s:
        me = client()
        status, headers, _ = s.get("/nope", client=me)  # no route: the app-wide limit counts it
        assert status == 404 and headers["ratelimit"] == '"application";r=7;t=60', headers
        answers = [s.get("/plain/", client=me) for _ in range(3)]  # a plain ASGI app mounted: the default limit
        assert [a[0] for a in answers] == [200, 200, 429], answers
        assert answers[0][1]["ratelimit"] == '"application";r=6;t=60, "default";r=1;t=60'
        assert [s.get("/r/x", client=me)[0] for _ in range(2)] == [200, 429]  # in an included router / a Mount
        if adapter == "fastapi":  # plain Starlette routes of included routers: the default limit, 2/minute
            for path in ("/r/starlette", "/r/deeper/z"):
                someone = client()
                assert [s.get(path, client=someone)[0] for _ in range(3)] == [200, 200, 429], path
        assert s.get("/late/y", client=me)[0] == 404
        assert s.request("POST", "/late")[0] == 200  # a router included (a route added) after serving requests
        other = client()
        assert [s.get("/late/y", client=other)[0] for _ in range(2)] == [200, 429]
        assert [s.get("/nope", client=me)[0] for _ in range(2)] == [404, 429]  # 8 app-wide: 429 before routing


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_problem_json_and_shadow_mode(adapter: str) -> None:
    with serve(adapter, "memory://", {"refusal": "problem"}) as s:
        me = client()
        for _ in range(3):
            s.get("/items", client=me)
        status, headers, body = s.get("/items", client=me)
        assert status == 429 and headers["content-type"] == "application/problem+json"
        assert json.loads(body) == {
            "type": "https://iana.org/assignments/http-problem-types#quota-exceeded",
            "title": "Request cannot be satisfied as assigned quota has been exceeded", "status": 429,
            "detail": "3/minute exceeded; retry in 60 s", "violated-policies": ["items"],
        }
        assert headers["retry-after"] == "60" and headers["ratelimit"] == '"items";r=0;t=60'
    with serve(adapter, "memory://", {"shadow": True}) as s:
        me = client()
        answers = [s.get("/items", client=me) for _ in range(5)]
        assert [a[0] for a in answers] == [200] * 5  # decided, never refused
        assert [a[1]["ratelimit"] for a in answers] == [f'"items";r={r};t=60' for r in (2, 1, 0, 0, 0)]
        assert not any("retry-after" in a[1] for a in answers)
        assert 1 <= len(s.logged("would have refused")) <= 2


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_deny_and_allow_lists_and_blocks(adapter: str, redis: RedisServer) -> None:
    """Lists held in the store (docs/key-lists.md), changed from outside the app (this process): a deny-listed
    client gets 403, an allowed one skips the limit, and with block_duration a refused client stays refused."""
    import ratewarden

    tag = f"{os.getpid()}-{next(_prefixes)}"
    deny, allow = ratewarden.KeyList(f"deny-{tag}", redis.url), ratewarden.KeyList(f"allow-{tag}", redis.url)
    mallory, partner, bob = client(), client(), client()
    deny.add(mallory)
    allow.add(partner)
    options = {"deny_list": f"deny-{tag}", "allow_list": f"allow-{tag}", "block_duration": 0.8}
    with serve(adapter, redis.url, options) as s:
        status, headers, body = s.get("/items", client=mallory)
        assert "ratelimit" not in headers and "retry-after" not in headers, (status, headers)
        denied = REFUSALS["deny_listed"]
        assert (status, headers["content-type"], body) == (denied["status"], denied["content_type"], denied["body"])
        assert [s.get("/items", client=partner)[0] for _ in range(5)] == [200] * 5  # the limit is 3/minute
        assert [s.get("/items", client=bob)[0] for _ in range(3)] == [200] * 3
        status, headers, _ = s.get("/items", client=bob)
        assert status == 429 and headers["retry-after"] == "60"  # the limit refuses: a block starts
        status, headers, _ = s.get("/items", client=bob)
        assert status == 429 and headers["retry-after"] == "1"  # the block answers, before the limit
        deny.remove(mallory)
        assert s.get("/items", client=mallory)[0] == 200
        allow.remove(partner)
        assert s.get("/items", client=partner)[0] == 200  # now counted: its first of 3


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_store_failure_fail_open_and_closed(adapter: str, own_redis: RedisServer) -> None:
    url = own_redis.url + "?timeout=200ms&connect_timeout=200ms"
    with serve(adapter, url) as open_, serve(adapter, url, {"on_store_error": "deny"}) as closed:
        me = client()
        assert open_.get("/items", client=me)[1]["ratelimit"] == '"items";r=2;t=60'
        assert closed.get("/items", client=client())[0] == 200
        own_redis.kill()
        for _ in range(30):
            status, headers, _ = open_.get("/items", client=me)
            # Fail open: no quota that nobody computed, and a field saying why the limit was skipped.
            assert status == 200 and headers.get("ratelimit-skipped") == "store-unavailable", headers
            assert "ratelimit" not in headers
        status, headers, _ = closed.get("/items", client=me)
        assert status == 429 and headers["retry-after"] == "1" and "ratelimit" not in headers
        # Told once, by the core's event on the "ratewarden" logger (not one line per request, and not again by
        # the adapter): "store failed", with the store's URL.
        lines = open_.logged(f"ratewarden: store failed ({own_redis.url}/0?timeout=200ms")
        assert len(lines) == 1, open_.log.read_text()
        assert not open_.log_lines("ratewarden: the store failed"), open_.log.read_text()


@pytest.mark.parametrize("adapter", ["django", "django-asgi"])
def test_django_limit_without_the_middleware(adapter: str) -> None:
    with serve(adapter, "memory://", extra_env={"RW_NO_MIDDLEWARE": "1"}) as s:
        me = client()
        for path in ("/items", "/aitems"):  # a sync view and an async one
            answers = [s.get(path, client=me) for _ in range(4)]
            assert [a[0] for a in answers] == [200, 200, 200, 429], path
            assert answers[0][1]["ratelimit"] == f'"{path[1:]}";r=2;t=60' and answers[3][1]["retry-after"] == "60"
        assert [s.get("/twice", client=me)[0] for _ in range(3)] == [200, 200, 429]


@pytest.mark.parametrize("middleware", [True, False], ids=["middleware", "no-middleware"])
@pytest.mark.parametrize("adapter", ["django", "django-asgi"])
def test_django_class_based_view_with_method_decorator(adapter: str, middleware: bool) -> None:
    # method_decorator(limit("3/minute"), name="dispatch"): counted once per request, under one name, with the
    # middleware or without.
    with serve(adapter, "memory://", extra_env={} if middleware else {"RW_NO_MIDDLEWARE": "1"}) as s:
        me = client()
        answers = [s.get("/report", client=me) for _ in range(4)]
        assert [a[0] for a in answers] == [200, 200, 200, 429]
        assert [a[1]["ratelimit"] for a in answers] == [f'"dispatch";r={r};t=60' for r in (2, 1, 0, 0)]


_ROUTES_AFTER = """
import django_app
from django.test import Client
from ratewarden.django import limiter
client = Client()
for n in (10, 500):
    for _ in range(n):
        client.get("/report")
    print(len(limiter._routes))
"""


@pytest.mark.parametrize("middleware", [True, False], ids=["middleware", "no-middleware"])
def test_django_method_decorator_keeps_nothing_per_request(middleware: bool) -> None:
    # method_decorator makes a new decorated method on every request: the routes ratewarden keeps stay as many
    # after 510 requests as after 10 (none holds a request or a view instance).
    env = {**os.environ, "RW_TEST_STORE": "memory://", "RW_TEST_PREFIX": "routes", "DJANGO_SETTINGS_MODULE":
           "django_app", "PYTHONPATH": str(APPS), **({} if middleware else {"RW_NO_MIDDLEWARE": "1"})}
    out = subprocess.run([sys.executable, "-c", _ROUTES_AFTER], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    after_10, after_510 = map(int, out.stdout.split())
    assert after_10 == after_510 <= 2, out.stdout


@pytest.mark.parametrize("adapter", ["django", "django-asgi"])
def test_django_async_view_with_the_middleware(adapter: str) -> None:
    with serve(adapter, "memory://", {"application": "100/minute"}) as s:
        me = client()
        answers = [s.get("/aitems", client=me) for _ in range(4)]
        assert [a[0] for a in answers] == [200, 200, 200, 429]
        assert answers[0][1]["ratelimit"] == '"application";r=99;t=60, "aitems";r=2;t=60'
        assert answers[3][1]["retry-after"] == "60" and answers[3][2].startswith("429 Too Many Requests")


@pytest.mark.parametrize("adapter", ["fastapi", "starlette", "django-asgi"])
def test_asgi_never_blocks_the_event_loop(adapter: str, gated_redis: GateProxy) -> None:
    # The gate before Redis holds every store call: 48 requests on one uvicorn worker all have their calls in flight
    # at once, and an unlimited route answers meanwhile; a call that blocked the event loop would hold up both for as
    # long as the gate stays shut. (Django: its sync views run one at a time in its thread; the limit is decided
    # before, on the event loop, all at once.)
    with serve(adapter, gated_redis.url) as s:
        run = next(_clients)
        s.get("/api", headers={"X-API-Key": f"warm-{run}"})
        keys = [f"k-{run}-{i}" for i in range(48)]
        with ThreadPoolExecutor(48) as pool:
            with gated_redis.shut():
                limited = [pool.submit(s.get, "/api", headers={"X-API-Key": k}) for k in keys]
                assert gated_redis.wait_held(k.encode() for k in keys), "the 48 store calls were never in flight at once"
                assert not any(f.done() for f in limited)
                assert s.get("/health")[0] == 200
            assert [f.result()[0] for f in limited] == [200] * 48


def test_user_first_and_combined_keys(server: Server) -> None:
    me, other, user = client(), client(), f"user{next(_clients)}"
    as_user = {"X-User": user}
    # keys.first(keys.user(), keys.address()): the user wherever they come from, else the address.
    assert [server.get("/me", client=c, headers=as_user)[0] for c in (me, other, me)] == [200, 200, 429]
    assert [server.get("/me", client=me)[0] for _ in range(3)] == [200, 200, 429]
    # keys.combine(keys.header("X-A"), keys.address()): one count per pair; no X-A, no key.
    assert server.get("/pair", client=me, headers={"X-A": "a"})[0] == 200
    assert server.get("/pair", client=other, headers={"X-A": "a"})[0] == 200
    assert server.get("/pair", client=me, headers={"X-A": "b"})[0] == 200
    assert server.get("/pair", client=me, headers={"X-A": "a"})[0] == 429
    assert server.get("/pair", client=me)[0] == 400


def test_asgi_server_stops_cleanly_with_store_calls_in_flight(slow_redis: str) -> None:
    # SIGTERM while 32 requests wait on a slow store: uvicorn's graceful shutdown lets them finish (each answered),
    # and the process exits at once after, without a hang or a traceback.
    with serve("fastapi", slow_redis) as s:
        run = next(_clients)
        with ThreadPoolExecutor(32) as pool:
            answers = [pool.submit(s.get, "/api", headers={"X-API-Key": f"t-{run}-{i}"}) for i in range(32)]
            time.sleep(0.03)
            s.process.send_signal(signal.SIGTERM)
            statuses: List[Any] = []
            for a in answers:
                try:
                    statuses.append(a.result()[0])
                except ConnectionRefusedError:  # not connected before the server stopped listening
                    statuses.append("not connected")
        assert s.process.wait(10) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it caught, once done
        assert 200 in statuses and set(statuses) <= {200, "not connected"}, statuses  # none dropped mid-flight
        assert "Traceback" not in s.log.read_text()


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_custom_refusal_handler(adapter: str) -> None:
    with serve(adapter, "memory://", extra_env={"RW_CUSTOM_REFUSAL": "1"}) as s:
        me = client()
        assert [s.get("/items", client=me)[0] for _ in range(3)] == [200] * 3
        status, headers, body = s.get("/items", client=me)
        assert status == 429 and json.loads(body) == {"policy": "items", "wait": 60}
        assert headers["retry-after"] == "60" and headers["ratelimit"] == '"items";r=0;t=60'  # its fields added


def test_count_only_failed_sign_ins(server: Server) -> None:
    # count_when=lambda status: status >= 400: a successful sign-in is given back (Limiter.refund), a failed one counts.
    user = f"user{next(_clients)}"

    def sign_in(password: str) -> int:
        return server.request("POST", "/signin", form={"username": user, "password": password})[0]

    assert [sign_in("right") for _ in range(6)] == [200] * 6  # more than the limit: none of them counted
    assert [sign_in("wrong") for _ in range(4)] == [401, 401, 401, 429]
    assert sign_in("right") == 429  # three failures: locked out for the minute


@pytest.mark.parametrize("mode", ["kill", "stop"])
@pytest.mark.parametrize("adapter", ADAPTERS)
def test_refund_failing_after_the_response(adapter: str, mode: str, own_redis: RedisServer) -> None:
    # count_when gives a successful sign-in's hit back once the response is made; the store dies (or hangs: SIGSTOP)
    # while three sign-ins are in their endpoints: each is still answered, in about the store's timeout at most, the
    # failed refunds make one log line, not three, and the server goes on answering.
    url = own_redis.url + "?timeout=200ms&connect_timeout=200ms"
    with serve(adapter, url) as s:
        user = f"user{next(_clients)}"
        assert s.request("POST", "/signin", form={"username": user, "password": "wrong"})[0] == 401
        with ThreadPoolExecutor(3) as pool:
            pending = [pool.submit(s.request, "POST", "/signin", form={"username": f"{user}-{i}", "password": "right"},
                                   headers={"X-Slow": "1"}) for i in range(3)]
            deadline = time.monotonic() + 5
            while int(own_redis.cli("DBSIZE")) < 4 and time.monotonic() < deadline:  # each hit made (a key each)
                time.sleep(0.01)
            assert int(own_redis.cli("DBSIZE")) == 4  # and now in the endpoint for 0.6 s
            own_redis.kill() if mode == "kill" else own_redis.stop()
            start = time.monotonic()
            statuses = [f.result(timeout=10)[0] for f in pending]
            elapsed = time.monotonic() - start
        assert statuses == [200] * 3
        assert elapsed < 2.5, elapsed
        assert s.get("/health")[0] == 200
        time.sleep(0.3)
        lines = s.logged("ratewarden: store failed (")  # the core's event: three failed refunds, one line
        assert len(lines) == 1, s.log.read_text()
        assert not s.log_lines("ratewarden: the store failed"), s.log.read_text()  # not told twice
        assert "Traceback" not in s.log.read_text()
        if mode == "stop":
            own_redis.cont()


def test_bad_options_fail_at_start_up() -> None:
    from ratewarden.asgi import RateLimiter

    with pytest.raises(ValueError, match="unknown option: stor"):
        RateLimiter(stor="memory://")
    with pytest.raises(ValueError, match="on_store_error must be one of"):
        RateLimiter(on_store_error="maybe")
    with pytest.raises(ValueError, match="application: .*fortnight"):
        RateLimiter(application="1/fortnight")
    with pytest.raises(ValueError, match="refusal must be one of"):
        RateLimiter(refusal="html")
    # Django: loading the app (what a server's worker does as it boots) fails, and says why.
    env = {**os.environ, "RW_TEST_STORE": "memory://", "RW_TEST_PREFIX": "bad", "DJANGO_SETTINGS_MODULE": "django_app",
           "RW_TEST_OPTIONS": json.dumps({"on_key_error": "maybe"}), "PYTHONPATH": str(APPS)}
    loaded = subprocess.run([sys.executable, "-c", "import django_app"], env=env, capture_output=True, text=True,
                            timeout=60)
    assert loaded.returncode != 0
    assert "ImproperlyConfigured: settings.RATEWARDEN['ON_KEY_ERROR'] must be one of" in loaded.stderr


_BAD_AT_START_UP = [  # (options, what the error says, in each adapter's name of the option)
    ({"algorithm": "gcra_typo"}, "{algorithm} must be one of 'fixed_window'"),
    ({"algorithm": "bogus", "default": "5/minute"}, "{algorithm} must be one of"),  # the algorithm, not the policy
    ({"prefix": "a{b}"}, "{prefix}: prefix \"a{{b}}\" must not contain '{{' or '}}'"),
    ({"application": 5}, "{application}: policy must be a str"),
    ({"store_failure_header": "Bad\nHeader"}, "{store_failure_header} must be a header name"),
]


@pytest.mark.parametrize("options, says", _BAD_AT_START_UP)
def test_bad_algorithm_prefix_policy_and_header_fail_at_start_up(options: Dict[str, Any], says: str) -> None:
    """Each bad option fails when the app starts, naming the option, not in every limited request (a 500)."""
    from flask import Flask

    from ratewarden.asgi import RateLimiter as AsgiRateLimiter
    from ratewarden.flask import RateLimiter as FlaskRateLimiter

    names = {o: o for o in options}
    with pytest.raises(ValueError) as caught:
        AsgiRateLimiter(**options)
    assert says.format(**names) in str(caught.value)
    app = Flask(__name__)
    app.config.update({f"RATEWARDEN_{o.upper()}": v for o, v in options.items()})
    with pytest.raises(ValueError) as caught:
        FlaskRateLimiter(app)
    assert says.format(**{o: f"RATEWARDEN_{o.upper()}" for o in options}) in str(caught.value)
    env = {**os.environ, "RW_TEST_STORE": "memory://", "RW_TEST_PREFIX": "bad", "DJANGO_SETTINGS_MODULE": "django_app",
           "RW_TEST_OPTIONS": json.dumps(options), "PYTHONPATH": str(APPS)}
    loaded = subprocess.run([sys.executable, "-c", "import django_app"], env=env, capture_output=True, text=True,
                            timeout=60)
    assert loaded.returncode != 0
    django_says = says.format(**{o: f"settings.RATEWARDEN[{o.upper()!r}]" for o in options})
    assert f"ImproperlyConfigured: {django_says}" in loaded.stderr, loaded.stderr


_WITHOUT_MULTIPART = """
import sys
sys.modules["python_multipart"] = None  # as if python-multipart were not installed (an import of it fails)
sys.modules["multipart"] = None
from ratewarden import keys
from ratewarden.asgi import RateLimiter
for declare in ({kind}):
    try:
        declare()
    except ImportError as error:
        print("refused:", error)
    else:
        print("accepted")
"""


def test_a_form_key_without_its_parser_fails_at_start_up() -> None:
    """Starlette parses forms with python-multipart: without it every request to a route keyed by a form field would
    answer 500 and go unlimited, so declaring such a key fails at once and names what to install."""
    declarations = ", ".join([
        "lambda: RateLimiter(key=keys.form('username'))",
        "lambda: RateLimiter().limit('5/minute', key=keys.first(keys.user(), keys.form('username')))",
        "lambda: RateLimiter().depends('5/minute', key=keys.form('username'))",
        "lambda: RateLimiter().limit('5/minute', key=keys.header('X-API-Key'))",  # no form: no parser needed
    ])
    out = subprocess.run([sys.executable, "-c", _WITHOUT_MULTIPART.format(kind=declarations)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 4, out.stdout
    for line in lines[:3]:
        assert line.startswith("refused: keys.") and "python-multipart" in line and "ratewarden[fastapi]" in line, line
    assert lines[3] == "accepted"
