"""The FastAPI app of adapters_bench.py, served by uvicorn: ``/`` (a limit of 10^9 a minute per client address:
every request allowed, each paying for a full decision) and ``/denied`` (1 a day per address: the driver uses it up
before measuring, so every measured request is refused). Both return a short text.

BENCH_VARIANT = bare (no limiter) | floor (no limiter: the fields ratewarden sends, as constant text, and with a
redis:// store one INCR per request through redis.asyncio, the fastest way to make one round trip per request here:
what any limiter that sends those fields, and stores on Redis, pays at least) | ratewarden (ratewarden.asgi's limit
decorator) | hand (the limiter a user would write by hand: hand.py) | slowapi (its decorator and exception handler,
headers on); BENCH_STORE = memory:// or a redis:// URL. Every limiter sends its headers.
"""

import os
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import PlainTextResponse

VARIANT = os.environ.get("BENCH_VARIANT", "bare")
STORE = os.environ.get("BENCH_STORE", "memory://")
ALLOWED = "1000000000/minute"
DENIED = "1/day"

app = FastAPI()

if VARIANT == "bare":
    @app.get("/")
    async def hello() -> PlainTextResponse:
        return PlainTextResponse("hello\n")

    @app.get("/denied")
    async def denied() -> PlainTextResponse:
        return PlainTextResponse("hello\n")

elif VARIANT == "floor":
    ALLOWED_FIELDS = {"RateLimit-Policy": '"hello";q=1000000000;w=60', "RateLimit": '"hello";r=999999999;t=60'}
    DENIED_FIELDS = {"RateLimit-Policy": '"denied";q=1;w=86400', "RateLimit": '"denied";r=0;t=86400',
                     "Retry-After": "86400"}
    DENIED_BODY = "429 Too Many Requests: 1/day exceeded; retry in 86400 s\n"
    if STORE == "memory://":
        @app.get("/")
        async def hello() -> PlainTextResponse:
            return PlainTextResponse("hello\n", headers=ALLOWED_FIELDS)

        @app.get("/denied")
        async def denied() -> PlainTextResponse:
            return PlainTextResponse(DENIED_BODY, 429, headers=DENIED_FIELDS)
    else:
        import redis.asyncio

        store = redis.asyncio.Redis.from_url(STORE)

        @app.get("/")
        async def hello(request: Request) -> PlainTextResponse:
            await store.incr(f"bench-floor:{request.client.host}")
            return PlainTextResponse("hello\n", headers=ALLOWED_FIELDS)

        @app.get("/denied")
        async def denied(request: Request) -> PlainTextResponse:
            await store.incr(f"bench-floor-denied:{request.client.host}")
            return PlainTextResponse(DENIED_BODY, 429, headers=DENIED_FIELDS)

elif VARIANT == "ratewarden":
    from ratewarden.asgi import RateLimiter

    limiter = RateLimiter(app, store=STORE, prefix="bench-fastapi")

    @app.get("/")
    @limiter.limit(ALLOWED)
    async def hello() -> PlainTextResponse:
        return PlainTextResponse("hello\n")

    @app.get("/denied")
    @limiter.limit(DENIED)
    async def denied() -> PlainTextResponse:
        return PlainTextResponse("hello\n")

elif VARIANT == "hand":
    from hand import hands

    HANDS = hands(STORE)

    async def by_hand(request: Request, hand: Any) -> PlainTextResponse:
        key = request.client.host  # the memory store answers at once: no await
        status, body, fields = hand.answer(hand.limiter.hit(key) if STORE == "memory://" else
                                           await hand.limiter.ahit(key))
        return PlainTextResponse(body, status, headers=fields)

    @app.get("/")
    async def hello(request: Request) -> PlainTextResponse:
        return await by_hand(request, HANDS[0])

    @app.get("/denied")
    async def denied(request: Request) -> PlainTextResponse:
        return await by_hand(request, HANDS[1])

elif VARIANT == "slowapi":
    from slowapi import Limiter, _rate_limit_exceeded_handler
    from slowapi.errors import RateLimitExceeded
    from slowapi.util import get_remote_address

    slow = Limiter(key_func=get_remote_address, storage_uri=STORE, headers_enabled=True,
                   key_prefix="bench-slowapi")
    app.state.limiter = slow
    app.add_exception_handler(RateLimitExceeded, _rate_limit_exceeded_handler)

    @app.get("/")
    @slow.limit(ALLOWED)
    async def hello(request: Request, response: Response) -> PlainTextResponse:
        return PlainTextResponse("hello\n")

    @app.get("/denied")
    @slow.limit(DENIED)
    async def denied(request: Request, response: Response) -> PlainTextResponse:
        return PlainTextResponse("hello\n")

else:
    raise SystemExit(f"unknown BENCH_VARIANT {VARIANT!r}")
