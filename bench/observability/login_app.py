"""The app of bench/observability/run.sh: a Flask login route under the limit docs/python.md gives a login route,
5 a second per username on a shared Redis, failing closed (on_store_error="deny": a login must never run unmetered).
Served by gunicorn with gunicorn_conf.py, which has each worker serve its own figures on a port of its own
(docs/observability.md, "Several worker processes"). OBS_STORE: the Redis URL; OBS_PREFIX: its key prefix."""

import logging
import os

from flask import Flask, request

from ratewarden import keys
from ratewarden.flask import RateLimiter

# The 'ratewarden' logger's events (a store failed or recovered, a circuit opened or closed), INFO ones too, with their
# Unix time and process: outage.py puts them on the run's time line.
_handler = logging.StreamHandler()
_handler.setFormatter(logging.Formatter("%(created).3f %(process)d %(levelname)s %(name)s: %(message)s"))
logging.getLogger("ratewarden").addHandler(_handler)
logging.getLogger("ratewarden").setLevel(logging.INFO)

app = Flask(__name__)
limiter = RateLimiter(app, store=os.environ["OBS_STORE"], prefix=os.environ.get("OBS_PREFIX", "obs"))


@app.post("/login")
@limiter.limit("5/second", key=keys.form("username"), on_store_error="deny")
def login():
    if request.form.get("password") == "right":
        return "welcome\n"
    return "wrong password\n", 401
