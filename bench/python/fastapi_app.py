"""The FastAPI app of adapters_bench.py, served by uvicorn: ``/`` (a limit of 10^9 a minute per client address:
every request allowed, each paying for a full decision) and ``/denied`` (1 a day per address: the driver uses it up
before measuring, so every measured request is refused). Both return a short text.

BENCH_VARIANT = bare (no limiter) | ratewarden (ratewarden.asgi's limit decorator) | slowapi (its decorator and
exception handler, headers on); BENCH_STORE = memory:// or a redis:// URL. Both limiters send their headers.
"""

import os

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
