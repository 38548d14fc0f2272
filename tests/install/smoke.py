"""Run by check_install.py with the interpreter of a venv where only the binary wheel was installed (with its
[flask] extra), from a folder outside the source tree: the package loads and decides on memory, on Redis, on
Redis over TLS (OpenSSL is inside the wheel) and on PostgreSQL (the system's libpq.so.5, loaded at run time), and the
Flask extension answers 429 at its limit.

    python smoke.py REDIS_URL REDISS_URL POSTGRES_URL
"""
import os
import sys

import ratewarden
from flask import Flask
from ratewarden.flask import RateLimiter

redis_url, rediss_url, postgres_url = sys.argv[1:4]
assert "site-packages" in ratewarden.__file__, ratewarden.__file__

for url in ("memory://", redis_url, rediss_url, postgres_url):  # the two Redis URLs are one server: a key each
    limiter = ratewarden.Limiter("2/minute", url, prefix=f"smoke-{os.getpid()}")
    allowed = [limiter.hit(url).allowed for _ in range(3)]
    assert allowed == [True, True, False], (url, allowed)

app = Flask(__name__)
limiter = RateLimiter(app, store=redis_url)


@app.get("/")
@limiter.limit("1/minute", key=lambda: "smoke-client")
def index():
    return "ok"


client = app.test_client()
statuses = [client.get("/").status_code for _ in range(2)]
assert statuses == [200, 429], statuses
print(f"wheel: ratewarden {ratewarden.__version__} from {ratewarden.__file__}: memory, redis, rediss, postgres and Flask work")
