"""Envoy's RLS v3 over gRPC: envoyproxy/ratelimit's config loaded unchanged and answered as it answers, our
additions, bad input (more in test_bad_requests.py), a store that fails (more in test_faults.py); one limit across
server processes: test_exactness.py."""

from __future__ import annotations

import time

import grpc
import pytest
from conftest import descriptor, fresh_window, rls_pb2

OK, OVER = rls_pb2.RateLimitResponse.OK, rls_pb2.RateLimitResponse.OVER_LIMIT
Unit = rls_pb2.RateLimitResponse.RateLimit

EDGE = """\
    domain: edge
    descriptors:
      - key: remote_address
        rate_limit:
          unit: minute
          requests_per_unit: 3
      - key: path
        value: /login
        rate_limit:
          name: login
          unit: hour
          requests_per_unit: 2
        descriptors:
          - key: user
            rate_limit:
              policy: 2/5m
              algorithm: sliding_window
      - key: path
        value: /files/*
        rate_limit:
          unit: second
          requests_per_unit: 1
      - key: path
        value: /health
        rate_limit:
          unlimited: true
      - key: path
        rate_limit:
          unit: day
          requests_per_unit: 1000
      - key: tier
        value: trial
        shadow_mode: true
        rate_limit:
          unit: minute
          requests_per_unit: 1
      - key: plan
        rate_limit:
          name: generic
          unit: minute
          requests_per_unit: 5
      - key: special_plan
        rate_limit:
          unit: minute
          requests_per_unit: 50
          replaces:
            - name: generic
    """


def window_left(unit_s: int) -> int:
    return unit_s - int(time.time()) % unit_s


def near(seconds: int, unit_s: int) -> bool:
    """`seconds` is what is left of the current window, give or take the second the call took (across a window's
    end too: 1 left just before it, 60 just after)."""
    d = abs(seconds - window_left(unit_s)) % unit_s
    return min(d, unit_s - d) <= 1


def test_a_peer_rule_counts_an_epoch_window_and_says_so(config_dir, start):
    fresh_window()
    server = start(config_dir({"edge.yaml": EDGE}))
    for remaining in (2, 1, 0):
        r = server.call("edge", descriptor(("remote_address", "10.0.0.1")))
        assert r.overall_code == OK
        (s,) = r.statuses
        assert (s.code, s.limit_remaining) == (OK, remaining)
        assert (s.current_limit.requests_per_unit, s.current_limit.unit) == (3, Unit.MINUTE)
        assert 0 < s.duration_until_reset.seconds <= 60
        assert near(s.duration_until_reset.seconds, 60)
    r = server.call("edge", descriptor(("remote_address", "10.0.0.1")))
    assert r.overall_code == OVER and r.statuses[0].code == OVER and r.statuses[0].limit_remaining == 0
    headers = {h.key: h.value for h in r.response_headers_to_add}
    assert headers["RateLimit-Limit"] == "3" and headers["RateLimit-Remaining"] == "0"
    assert near(int(headers["RateLimit-Reset"]), 60)
    # Another address is another counter.
    assert server.call("edge", descriptor(("remote_address", "10.0.0.2"))).overall_code == OK


def test_matching_exact_wildcard_key_only_depth_and_unknowns(config_dir, start):
    server = start(config_dir({"edge.yaml": EDGE}))
    login = server.call("edge", descriptor(("path", "/login"))).statuses[0]
    assert (login.current_limit.name, login.current_limit.requests_per_unit) == ("login", 2)
    files = server.call("edge", descriptor(("path", "/files/a/b"))).statuses[0]
    assert (files.current_limit.requests_per_unit, files.current_limit.unit) == (1, Unit.SECOND)
    other = server.call("edge", descriptor(("path", "/other"))).statuses[0]
    assert (other.current_limit.requests_per_unit, other.current_limit.unit) == (1000, Unit.DAY)
    # Depth: the nested rule at depth 2, with ours (a policy string: unit UNKNOWN, remaining from the core).
    user = server.call("edge", descriptor(("path", "/login"), ("user", "carol"))).statuses[0]
    assert (user.code, user.limit_remaining, user.current_limit.requests_per_unit) == (OK, 1, 2)
    # sliding_window: until the whole window (and the bucket it started in) has passed.
    assert user.current_limit.unit == Unit.UNKNOWN and 0 < user.duration_until_reset.seconds <= 300 + 30
    # Entries past a leaf, an unknown key, an unknown domain: OK with no limit.
    for domain, d in (("edge", descriptor(("remote_address", "x"), ("more", "y"))),
                      ("edge", descriptor(("nothing", "x"))), ("nowhere", descriptor(("remote_address", "x")))):
        (s,) = server.call(domain, d).statuses
        assert s.code == OK and not s.HasField("current_limit") and s.limit_remaining == 0


def test_unlimited_shadow_replaces_and_several_descriptors(config_dir, start):
    fresh_window()
    server = start(config_dir({"edge.yaml": EDGE}))
    (s,) = server.call("edge", descriptor(("path", "/health"))).statuses
    assert (s.code, s.limit_remaining, s.HasField("current_limit")) == (OK, 4294967295, False)
    for _ in range(3):  # shadow: over its limit of 1, yet OK, the limit reported
        r = server.call("edge", descriptor(("tier", "trial")))
        assert r.overall_code == OK and r.statuses[0].current_limit.requests_per_unit == 1
    # special_plan replaces "generic": plan answers as no limit while both are in one request.
    r = server.call("edge", descriptor(("plan", "p")), descriptor(("special_plan", "p")))
    assert not r.statuses[0].HasField("current_limit")
    assert r.statuses[1].current_limit.requests_per_unit == 50
    # One over, one not: OVER_LIMIT overall, each status its own.
    for _ in range(3):
        server.call("edge", descriptor(("remote_address", "y")))
    r = server.call("edge", descriptor(("remote_address", "y")), descriptor(("remote_address", "z")))
    assert r.overall_code == OVER and [s.code for s in r.statuses] == [OVER, OK]


def test_hits_addend_zero_checks_and_overrides_set_their_own_limit(config_dir, start):
    fresh_window()
    server = start(config_dir({"edge.yaml": EDGE}))
    d = ("remote_address", "h")
    assert server.call("edge", descriptor(d, hits=0)).statuses[0].limit_remaining == 3  # nothing counted
    assert server.call("edge", descriptor(d), hits=2).statuses[0].limit_remaining == 1
    assert server.call("edge", descriptor(d, hits=0)).statuses[0].limit_remaining == 1
    r = server.call("edge", descriptor(d, hits=5))  # more than the limit: over, without counting
    assert r.statuses[0].code == OVER
    s = server.call("edge", descriptor(("anything", "x"), limit=(2, 2))).statuses[0]  # 2 per MINUTE, the caller's
    assert (s.code, s.limit_remaining, s.current_limit.requests_per_unit, s.current_limit.unit) == (OK, 1, 2, Unit.MINUTE)


def test_bad_requests_are_invalid_arguments(config_dir, start):
    server = start(config_dir({"edge.yaml": EDGE}), "memory://", "--max-descriptors", "4", "--max-entries", "3")
    cases = [("", [descriptor(("a", "b"))], "domain must not be empty"),
             ("edge", [], "descriptor list must not be empty"),
             ("edge", [descriptor(("a", "b"))] * 5, "too many descriptors: 5, at most 4"),
             ("edge", [descriptor(*[("k", "v")] * 4)], "too many entries in a descriptor: 4, at most 3"),
             ("edge", [descriptor(("a", "b"), limit=(5, 0))], "needs a unit"),
             ("edge", [descriptor(("remote_address", "v" * 5000))], "too long")]
    for domain, descriptors, message in cases:
        with pytest.raises(grpc.RpcError) as error:
            server.call(domain, *descriptors)
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT, message
        assert message in error.value.details()
    with pytest.raises(grpc.RpcError) as error:  # a 2 MB message: over --max-message-bytes' 1 MB default
        server.call("edge", descriptor(("k", "v" * 2_000_000)))
    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert server.call("edge", descriptor(("remote_address", "still-serving"))).overall_code == OK


def test_a_store_failure_answers_unavailable_within_the_timeout(config_dir, start):
    server = start(config_dir({"edge.yaml": EDGE}), "redis://127.0.0.1:1?timeout=200ms&connect_timeout=200ms")
    began = time.monotonic()
    with pytest.raises(grpc.RpcError) as error:
        server.call("edge", descriptor(("remote_address", "x")))
    assert error.value.code() == grpc.StatusCode.UNAVAILABLE
    assert time.monotonic() - began < 2
    # on_store_error per domain: allow answers OK with RateLimit-Skipped, deny answers OVER_LIMIT.
    for policy, code in (("allow", OK), ("deny", OVER)):
        config = config_dir({"edge.yaml": f"domain: edge\non_store_error: {policy}\ndescriptors:\n"
                             "  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n"})
        other = start(config, "redis://127.0.0.1:1?timeout=200ms&connect_timeout=200ms")
        r = other.call("edge", descriptor(("k", "v")))
        assert r.overall_code == code
        assert {h.key: h.value for h in r.response_headers_to_add}["RateLimit-Skipped"] == "store-unavailable"
