"""The FastAPI app of tests/python/test_metrics_http.py, for uvicorn (one worker): its figures at /metrics, through
prometheus_client's ASGI app and ratewarden.prometheus's collector. RW_TEST_STORE, RW_TEST_PREFIX. POST /login:
5/minute per username (a form field); GET /users/{user_id}: 2/minute per address."""

import os

from fastapi import FastAPI
from prometheus_client import CollectorRegistry, make_asgi_app

import ratewarden.prometheus
from ratewarden import keys
from ratewarden.asgi import RateLimiter

app = FastAPI()
limiter = RateLimiter(app, store=os.environ["RW_TEST_STORE"], prefix=os.environ["RW_TEST_PREFIX"])

registry = CollectorRegistry()
ratewarden.prometheus.register(registry)
app.mount("/metrics", make_asgi_app(registry))


@app.post("/login")
@limiter.limit("5/minute", key=keys.form("username"))
async def login() -> dict:
    return {"ok": True}


@app.get("/users/{user_id}")
@limiter.limit("2/minute")
async def user(user_id: int) -> dict:
    return {"user": user_id}
