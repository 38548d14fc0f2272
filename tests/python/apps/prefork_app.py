"""A Flask app for gunicorn --preload (tests/python/test_fork.py): the master makes a limiter call while it imports
this module, before it forks its workers. Client i calls /client/i with X-Client: client<i>; route i's limit is
100/day for client 0 and 1000*i/day for the others, so every response's RateLimit fields name whose decision it is."""

import os

import ratewarden
from flask import Flask, request
from ratewarden.flask import RateLimiter

URL = os.environ["RW_TEST_STORE"]
PREFIX = os.environ["RW_TEST_PREFIX"]

# The warm-up call, in the master: its connections are open when gunicorn forks.
ratewarden.Limiter("1000000/day", URL, prefix=PREFIX).hit("master-warm-up")

app = Flask(__name__)
limiter = RateLimiter(app, store=URL, prefix=PREFIX, key=lambda: request.headers["X-Client"], on_store_error="raise")


def _route(i: int) -> None:
    policy = "100/day" if i == 0 else f"{1000 * i}/day"

    def view() -> str:
        return f"client{i} ok (pid {os.getpid()})"

    view.__name__ = view.__qualname__ = f"client{i}"  # before @limit, which keys limits by the view's name
    app.add_url_rule(f"/client/{i}", view_func=limiter.limit(policy)(view))


for _i in range(8):
    _route(_i)
