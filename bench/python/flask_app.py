"""The Flask app of the HTTP benchmark: one route, limited (so every request is allowed) or not.

BENCH_VARIANT = bare | ratewarden | flask-limiter; BENCH_STORE = memory:// or a redis:// URL. Both limiters send
their rate-limit headers. Served by gunicorn: `gunicorn flask_app:app`.
"""

import os

from flask import Flask

VARIANT = os.environ.get("BENCH_VARIANT", "bare")
STORE = os.environ.get("BENCH_STORE", "memory://")
POLICY = "1000000000/minute"

app = Flask(__name__)


def hello() -> str:
    return "hello\n"


if VARIANT == "ratewarden":
    from ratewarden.flask import RateLimiter

    limiter = RateLimiter(app, store=STORE, prefix="bench-http")
    hello = limiter.limit(POLICY)(hello)
elif VARIANT == "flask-limiter":
    from flask_limiter import Limiter
    from flask_limiter.util import get_remote_address

    flask_limiter = Limiter(get_remote_address, app=app, storage_uri=STORE, headers_enabled=True)
    hello = flask_limiter.limit(POLICY)(hello)
elif VARIANT != "bare":
    raise SystemExit(f"unknown BENCH_VARIANT {VARIANT!r}")

app.add_url_rule("/", view_func=hello)
