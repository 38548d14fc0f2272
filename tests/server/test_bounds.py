"""Bounds that keep one caller from exhausting the server, each refused with a status that names it: calls in flight
(--max-in-flight), streams per connection (--max-concurrent-streams: gRPC clients wait for a free one), message size
(--max-message-bytes). Descriptors and entries per request: test_rls.py; HTTP's header and body: test_http.py."""

from __future__ import annotations

import json
import re
import socket
import time

import grpc
import pytest
from conftest import descriptor, rls_pb2, rls_pb2_grpc

EDGE = "domain: edge\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 100}\n"
REQUEST = rls_pb2.RateLimitRequest(domain="edge", descriptors=[descriptor(("k", "v"))])


def in_flight(server) -> int:
    text = server.http("GET", "/metrics")[2]
    return int(re.search(r"^ratewarden_server_requests_in_flight (\d+)$", text, re.M).group(1))


def wait_for_in_flight(server, n: int) -> None:
    deadline = time.monotonic() + 10
    while in_flight(server) != n:
        assert time.monotonic() < deadline, f"never {n} calls in flight"
        time.sleep(0.02)


def connection(server) -> grpc.Channel:
    """A channel of its own connection (channels otherwise share one to the same target)."""
    return grpc.insecure_channel(f"127.0.0.1:{server.port}", options=[("grpc.use_local_subchannel_pool", 1)])


def test_calls_in_flight_and_streams_per_connection_are_bounded(config_dir, start):
    # A store that never answers: a listener that never accepts. Calls wait on it until it closes.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    store = f"redis://127.0.0.1:{silent.getsockname()[1]}?timeout=60s&connect_timeout=60s"
    server = start(config_dir({"edge.yaml": EDGE}), store, "--max-in-flight", "2", "--max-concurrent-streams", "1")
    channels = [connection(server), connection(server)]
    second, third = (rls_pb2_grpc.RateLimitServiceStub(c) for c in channels)
    calls = []
    try:
        calls.append(server.stub.ShouldRateLimit.future(REQUEST, timeout=60))
        wait_for_in_flight(server, 1)
        # One stream per connection: the next call on this connection waits in the client for a free stream, so the
        # call on the other connection, sent after it, is the one that reaches the server.
        calls.append(server.stub.ShouldRateLimit.future(REQUEST, timeout=60))
        calls.append(second.ShouldRateLimit.future(REQUEST, timeout=60))
        wait_for_in_flight(server, 2)
        assert not calls[1].done()
        # Two in flight: the next is refused at once, over gRPC and over HTTP, naming the bound.
        with pytest.raises(grpc.RpcError) as error:
            third.ShouldRateLimit(REQUEST, timeout=10)
        assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert error.value.details() == "too many requests in flight: at most 2 (--max-in-flight)"
        body = json.dumps({"domain": "edge", "descriptors": [{"entries": [{"key": "k", "value": "v"}]}]}).encode()
        status, _, text = server.http("POST", "/json", body)
        assert status == 503 and "(--max-in-flight)" in text
        assert in_flight(server) == 2
    finally:
        silent.close()  # the store's connections are reset: every call ends, UNAVAILABLE
    for call in calls:
        assert call.exception(timeout=30).code() == grpc.StatusCode.UNAVAILABLE
    wait_for_in_flight(server, 0)
    for channel in channels:
        channel.close()


def test_a_message_over_the_bound_is_resource_exhausted(config_dir, start):
    server = start(config_dir({"edge.yaml": EDGE}), "memory://", "--max-message-bytes", "4096")
    with pytest.raises(grpc.RpcError) as error:
        server.call("edge", descriptor(("k", "v" * 5000)))
    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert re.search(r"larger than max \(\d+ vs\. 4096\)", error.value.details()), error.value.details()
    assert server.call("edge", descriptor(("k", "v" * 3000))).overall_code == rls_pb2.RateLimitResponse.OK
