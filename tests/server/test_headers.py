"""--limit-headers: envoyproxy/ratelimit's trio by default, the IETF draft's RateLimit-Policy and RateLimit fields
with `ietf` (each limited descriptor a quota, named by its rule), none with `off`; a bad style refuses to start."""

from __future__ import annotations

import subprocess

from conftest import BINARY, descriptor

RULES = """\
    domain: edge
    descriptors:
      - key: user
        rate_limit: {name: login, unit: hour, requests_per_unit: 2}
      - key: client
        rate_limit: {policy: 10/5m}
    """


def headers(answer) -> dict:
    return {h.key: h.value for h in answer.response_headers_to_add}


def test_ietf_fields_name_every_limited_descriptor(config_dir, start):
    server = start(config_dir({"edge.yaml": RULES}), "memory://", "--limit-headers", "ietf")
    first = server.call("edge", descriptor(("user", "u1")), descriptor(("client", "c1")), descriptor(("none", "x")))
    h = headers(first)
    assert set(h) == {"RateLimit-Policy", "RateLimit"}
    assert h["RateLimit-Policy"] == '"login";q=2;w=3600, "edge.client";q=10;w=300'
    login, client = h["RateLimit"].split(", ")
    assert login.startswith('"login";r=1;t=') and 0 < int(login.split("t=")[1]) <= 3600
    assert client == '"edge.client";r=9;t=300'
    server.call("edge", descriptor(("user", "u1")))
    over = server.call("edge", descriptor(("user", "u1")))
    assert headers(over)["RateLimit"].startswith('"login";r=0;t=')


def test_envoy_trio_by_default_and_off(config_dir, start):
    config = config_dir({"edge.yaml": RULES})
    trio = headers(start(config).call("edge", descriptor(("user", "u2"))))
    assert set(trio) == {"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"}
    assert headers(start(config, "memory://", "--limit-headers", "off").call("edge", descriptor(("user", "u3")))) == {}


def test_a_bad_style_refuses_to_start(config_dir):
    done = subprocess.run([str(BINARY), "--config", str(config_dir({"edge.yaml": RULES})), "--limit-headers",
                           "draft-3"], capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and "--limit-headers takes envoy, ietf or off" in done.stderr, done.stderr
