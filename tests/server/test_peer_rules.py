"""envoyproxy/ratelimit's rules off the common path, answered as it answers them: an override of 0, many distinct
overrides, `replaces` with `unlimited` rules, the status of a limit decided without the store (a limit of 0, a cost
over a policy's capacity) and `quota_mode`."""

from __future__ import annotations

import json
import re
import time

from conftest import descriptor, fresh_window, rls_pb2

OK, OVER = rls_pb2.RateLimitResponse.OK, rls_pb2.RateLimitResponse.OVER_LIMIT
Unit = rls_pb2.RateLimitResponse.RateLimit

EDGE = """\
    domain: edge
    descriptors:
      - key: k
        rate_limit: {unit: hour, requests_per_unit: 100}
    """


def in_flight(server) -> int:
    text = server.http("GET", "/metrics")[2]
    return int(re.search(r"^ratewarden_server_requests_in_flight (\d+)$", text, re.M).group(1))


def epoch_left(unit_s: int, seconds: int) -> bool:
    """`seconds` is what is left of the current epoch window (give or take the second the call took)."""
    d = abs(seconds - (unit_s - int(time.time()) % unit_s)) % unit_s
    return 0 < seconds <= unit_s and min(d, unit_s - d) <= 1


def test_an_override_of_0_is_over_the_limit_over_grpc_and_json(config_dir, start):
    server = start(config_dir({"edge.yaml": EDGE}))
    for _ in range(3):
        r = server.call("edge", descriptor(("k", "x"), limit=(0, Unit.MINUTE)))
        (s,) = r.statuses
        assert (r.overall_code, s.code) == (OVER, OVER)
        assert (s.current_limit.requests_per_unit, s.current_limit.unit) == (0, Unit.MINUTE)
        assert epoch_left(60, s.duration_until_reset.seconds)
    # A check (hits_addend 0) passes.
    assert server.call("edge", descriptor(("k", "x"), hits=0, limit=(0, Unit.HOUR))).overall_code == OK
    body = json.dumps({"domain": "edge", "descriptors": [{"entries": [{"key": "k", "value": "x"}],
                                                          "limit": {"requestsPerUnit": 0, "unit": "MINUTE"}}]})
    status, _, text = server.http("POST", "/json", body.encode())
    assert status == 429 and json.loads(text)["statuses"][0]["code"] == "OVER_LIMIT"
    assert server.process.poll() is None
    assert in_flight(server) == 0
    assert server.call("edge", descriptor(("k", "x"))).overall_code == OK


def test_distinct_overrides_past_the_tables_bound_are_all_answered(config_dir, start):
    server = start(config_dir({"edge.yaml": EDGE}))
    for n in range(1, 1202):  # the table keeps 1,000
        (s,) = server.call("edge", descriptor(("k", f"o{n}"), limit=(n, Unit.HOUR))).statuses
        assert (s.code, s.current_limit.requests_per_unit, s.limit_remaining) == (OK, n, n - 1)
    # An override made again after the table was cleared counts on: its counts are the store's.
    (s,) = server.call("edge", descriptor(("k", "o1"), limit=(1, Unit.HOUR))).statuses
    assert s.code == OVER


REPLACES = """\
    domain: edge
    descriptors:
      - key: user
        rate_limit: {name: per_user, unit: minute, requests_per_unit: 5}
      - key: vip
        rate_limit: {name: vip, unlimited: true, replaces: [{name: per_user}]}
      - key: health
        rate_limit: {name: health, unlimited: true}
      - key: capped
        rate_limit: {name: capped, unit: minute, requests_per_unit: 3, replaces: [{name: health}]}
    """


def test_an_unlimited_rules_replaces_count_and_an_unlimited_rule_is_never_replaced(config_dir, start):
    server = start(config_dir({"edge.yaml": REPLACES}))
    # vip (unlimited) replaces per_user: no limit for the user while both are in one request.
    r = server.call("edge", descriptor(("user", "u")), descriptor(("vip", "v")))
    assert r.overall_code == OK
    assert not r.statuses[0].HasField("current_limit") and r.statuses[0].limit_remaining == 0
    assert r.statuses[1].limit_remaining == 4294967295
    assert server.call("edge", descriptor(("user", "u"))).statuses[0].current_limit.requests_per_unit == 5
    # capped replaces health, which is unlimited: health stays unlimited.
    r = server.call("edge", descriptor(("health", "h")), descriptor(("capped", "c")))
    assert r.statuses[0].limit_remaining == 4294967295 and not r.statuses[0].HasField("current_limit")
    assert r.statuses[1].current_limit.requests_per_unit == 3


WITHOUT_STORE = """\
    domain: edge
    descriptors:
      - key: zero
        rate_limit: {name: zero, unit: minute, requests_per_unit: 0}
      - key: window
        rate_limit: {name: window, policy: 5/minute, algorithm: sliding_window}
      - key: bucket
        rate_limit: {name: bucket, policy: 5/minute, algorithm: token_bucket}
      - key: two
        rate_limit: {name: two, policy: "2/second;5/minute"}
      - key: odd
        rate_limit: {name: odd, policy: 3/90s}
    """


def test_limits_decided_without_the_store_say_their_limit_and_reset(config_dir, start):
    fresh_window(60, 3)
    server = start(config_dir({"edge.yaml": WITHOUT_STORE}))
    r = server.call("edge", descriptor(("zero", "a")))
    (s,) = r.statuses
    limit = s.current_limit
    assert (r.overall_code, s.code, limit.requests_per_unit, limit.unit) == (OVER, OVER, 0, Unit.MINUTE)
    assert epoch_left(60, s.duration_until_reset.seconds)
    # A cost over a policy's capacity: the policy with the smallest says its limit, unit and whole period.
    for key, limit, unit, reset in (("window", 5, Unit.MINUTE, 60), ("bucket", 5, Unit.MINUTE, 60),
                                    ("two", 2, Unit.SECOND, 1), ("odd", 3, Unit.UNKNOWN, 90)):
        r = server.call("edge", descriptor((key, "a"), hits=6))
        (s,) = r.statuses
        assert (r.overall_code, s.code, s.limit_remaining) == (OVER, OVER, 0), key
        assert (s.current_limit.name, s.current_limit.requests_per_unit, s.current_limit.unit) == (key, limit, unit)
        assert s.duration_until_reset.seconds == reset, key
        headers = {h.key: h.value for h in r.response_headers_to_add}
        assert (headers["RateLimit-Limit"], headers["RateLimit-Reset"]) == (str(limit), str(reset))


QUOTA = """\
    domain: edge
    descriptors:
      - key: q1
        quota_mode: true
        rate_limit: {name: q1, unit: minute, requests_per_unit: 1}
      - key: q2
        quota_mode: true
        rate_limit: {name: q2, unit: minute, requests_per_unit: 100}
      - key: plain
        rate_limit: {name: plain, unit: minute, requests_per_unit: 50}
    """


def test_quota_mode_refuses_only_when_every_quota_descriptor_is_over(config_dir, start):
    fresh_window(60, 5)
    server = start(config_dir({"edge.yaml": QUOTA}))
    server.call("edge", descriptor(("q1", "a")))  # q1's one request
    # q1 over, q2 not: OK overall, q1's status still OVER_LIMIT; the headers are the least remaining's (q1, 0).
    r = server.call("edge", descriptor(("q1", "a")), descriptor(("q2", "a")), descriptor(("plain", "a")))
    assert r.overall_code == OK and [s.code for s in r.statuses] == [OVER, OK, OK]
    headers = {h.key: h.value for h in r.response_headers_to_add}
    assert (headers["RateLimit-Limit"], headers["RateLimit-Remaining"]) == ("1", "0")
    # Every quota descriptor over (here the only one): OVER_LIMIT.
    r = server.call("edge", descriptor(("q1", "a")), descriptor(("plain", "b")))
    assert r.overall_code == OVER and [s.code for s in r.statuses] == [OVER, OK]
    # A descriptor not in quota mode over its limit refuses the call, and is the one the headers describe.
    r = server.call("edge", descriptor(("plain", "c"), hits=51), descriptor(("q1", "a")), descriptor(("q2", "c")))
    assert r.overall_code == OVER and [s.code for s in r.statuses] == [OVER, OVER, OK]
    headers = {h.key: h.value for h in r.response_headers_to_add}
    assert headers["RateLimit-Limit"] == "50"
