"""One limit at the edge and in the app: a rule whose `key` is a library limiter's key (here a Flask route's shared
scope) counts that very limit on one Redis — Envoy in front, the app behind, one count."""

from __future__ import annotations

import http.client
import threading
import time

from conftest import descriptor, rls_pb2
from flask import Flask, request
from ratewarden.flask import RateLimiter
from werkzeug.serving import make_server


def test_a_flask_route_and_the_service_admit_exactly_the_limit_together(config_dir, start, redis):
    user = f"carol{time.time_ns()}"
    app = Flask(__name__)
    limiter = RateLimiter(app, store=redis.url)

    @app.post("/login")
    @limiter.shared_limit("5/minute", "login", key=lambda: request.form["user"])
    def login():
        return "welcome"

    web = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    config = config_dir({"edge.yaml": """\
        domain: edge
        descriptors:
          - key: path
            value: /login
            descriptors:
              - key: user
                rate_limit:
                  policy: 5/minute
                  key: "login:{user}"
        """})
    server = start(config, redis.url)
    answers = []
    for i in range(12):  # alternating: the edge, then the app
        if i % 2 == 0:
            code = server.call("edge", descriptor(("path", "/login"), ("user", user))).overall_code
            answers.append("ok" if code == rls_pb2.RateLimitResponse.OK else "over")
        else:
            c = http.client.HTTPConnection("127.0.0.1", web.server_port, timeout=10)
            c.request("POST", "/login", body=f"user={user}",
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
            status = c.getresponse().status
            c.close()
            answers.append("ok" if status == 200 else "over")
    web.shutdown()
    assert answers == ["ok"] * 5 + ["over"] * 7, answers
