"""The Flask app of the HTTP benchmark, served by gunicorn (`gunicorn flask_app:app`): two routes, each one view
returning a short text.

- ``/``: limited to 10^9 a minute per client address, so every request is allowed and pays for a full decision;
- ``/denied``: limited to 1 a day per client address, and that one request is made when the app is loaded (in every
  gunicorn worker, each of which has its own memory store), so every request of the benchmark is refused.

BENCH_VARIANT = bare (no limiter: the baseline of both routes) | floor (no limiter: the fields ratewarden sends, as
constant text, and with a redis:// store one INCR per request through redis-py: what any limiter that sends those
fields, and stores on Redis, pays at least) | ratewarden | hand (the limiter a user would write by hand: hand.py) |
flask-limiter; BENCH_STORE = memory:// or a redis:// URL. Every limiter sends its rate-limit headers.
"""

import os

from flask import Flask, request

VARIANT = os.environ.get("BENCH_VARIANT", "bare")
STORE = os.environ.get("BENCH_STORE", "memory://")
ALLOWED = "1000000000/minute"
DENIED = "1/day"

app = Flask(__name__)


def hello() -> str:
    return "hello\n"


def denied() -> str:
    return "hello\n"


if VARIANT == "floor":
    ALLOWED_FIELDS = {"RateLimit-Policy": '"hello";q=1000000000;w=60', "RateLimit": '"hello";r=999999999;t=60'}
    DENIED_FIELDS = {"RateLimit-Policy": '"denied";q=1;w=86400', "RateLimit": '"denied";r=0;t=86400',
                     "Retry-After": "86400", "Content-Type": "text/plain; charset=utf-8"}
    DENIED_BODY = "429 Too Many Requests: 1/day exceeded; retry in 86400 s\n"
    if STORE != "memory://":
        import redis

        store = redis.Redis.from_url(STORE)

    def hello() -> "tuple[str, dict]":  # type: ignore[no-redef]
        if STORE != "memory://":
            store.incr(f"bench-floor:{request.remote_addr}")
        return "hello\n", ALLOWED_FIELDS

    def denied() -> "tuple[str, int, dict]":  # type: ignore[no-redef]
        if STORE != "memory://":
            store.incr(f"bench-floor-denied:{request.remote_addr}")
        return DENIED_BODY, 429, DENIED_FIELDS

elif VARIANT == "ratewarden":
    from ratewarden.flask import RateLimiter

    limiter = RateLimiter(app, store=STORE, prefix="bench-http")
    hello = limiter.limit(ALLOWED)(hello)
    denied = limiter.limit(DENIED)(denied)
elif VARIANT == "hand":
    from hand import hands

    HANDS = hands(STORE)

    def by_hand(hand) -> "tuple[str, int, dict]":  # type: ignore[no-untyped-def]
        status, body, fields = hand.answer(hand.limiter.hit(request.remote_addr))
        return body, status, fields

    def hello() -> "tuple[str, int, dict]":  # type: ignore[no-redef]
        return by_hand(HANDS[0])

    def denied() -> "tuple[str, int, dict]":  # type: ignore[no-redef]
        return by_hand(HANDS[1])

elif VARIANT == "flask-limiter":
    from flask_limiter import Limiter
    from flask_limiter.util import get_remote_address

    flask_limiter = Limiter(get_remote_address, app=app, storage_uri=STORE, headers_enabled=True)
    hello = flask_limiter.limit(ALLOWED)(hello)
    denied = flask_limiter.limit(DENIED)(denied)
elif VARIANT != "bare":
    raise SystemExit(f"unknown BENCH_VARIANT {VARIANT!r}")

app.add_url_rule("/", view_func=hello)
app.add_url_rule("/denied", view_func=denied)

if VARIANT not in ("bare", "floor"):
    # wrk connects from 127.0.0.1: use up that key's one request a day on /denied.
    app.test_client().get("/denied", environ_base={"REMOTE_ADDR": "127.0.0.1"})
