"""examples/envoy: the descriptors Envoy builds from envoy.yaml's rate_limits actions, sent to a server started on
the example's config directory, get the limits its comments promise. (No Envoy binary here: the test builds the
descriptors as Envoy's remote_address and request_headers actions do, from envoy.yaml itself.)"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Dict, List, Tuple

import yaml
from conftest import descriptor, rls_pb2

OK, OVER = rls_pb2.RateLimitResponse.OK, rls_pb2.RateLimitResponse.OVER_LIMIT
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "envoy"


def envoy_config() -> dict:
    return yaml.safe_load((EXAMPLE / "envoy.yaml").read_text())


def filter_and_route(config: dict) -> Tuple[dict, dict]:
    manager = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    ratelimit = next(f["typed_config"] for f in manager["http_filters"] if f["name"] == "envoy.filters.http.ratelimit")
    route = manager["route_config"]["virtual_hosts"][0]["routes"][0]["route"]
    return ratelimit, route


def descriptors_of(route: dict, address: str, headers: Dict[str, str]) -> List[object]:
    """Envoy's actions: each rate_limits entry is a descriptor; one whose header is absent is not sent."""
    out = []
    for rate_limit in route["rate_limits"]:
        entries = []
        for action in rate_limit["actions"]:
            if "remote_address" in action:
                entries.append(("remote_address", address))
            elif "request_headers" in action:
                header = action["request_headers"]
                if header["header_name"] not in headers:
                    break
                entries.append((header["descriptor_key"], headers[header["header_name"]]))
            else:
                raise AssertionError(f"an action this test does not build: {action}")
        else:
            out.append(descriptor(*entries))
    return out


def test_the_envoy_example_points_at_the_servers_grpc_port_over_http2():
    config = envoy_config()
    ratelimit, _ = filter_and_route(config)
    cluster = next(c for c in config["static_resources"]["clusters"]
                   if c["name"] == ratelimit["rate_limit_service"]["grpc_service"]["envoy_grpc"]["cluster_name"])
    endpoint = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
    assert endpoint["address"]["socket_address"]["port_value"] == 8081  # --grpc-listen's default port
    options = cluster["typed_extension_protocol_options"]["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
    assert "http2_protocol_options" in options["explicit_http_config"]
    assert ratelimit["rate_limit_service"]["transport_api_version"] == "V3"


def test_the_envoy_examples_limits_answer_as_its_comments_say(start):
    ratelimit, route = filter_and_route(envoy_config())
    server = start(EXAMPLE / "config")
    domain = ratelimit["domain"]
    user = f"u-{uuid.uuid4().hex[:8]}"

    # /login, per user: 5 in 15 minutes whatever the address (each try from another address).
    codes = []
    for i in range(6):
        answer = server.call(domain, *descriptors_of(route, f"10.1.0.{i}", {":path": "/login", "x-user": user}))
        assert len(answer.statuses) == 2
        codes.append((answer.overall_code, answer.statuses[0].code, answer.statuses[1].code))
    assert codes == [(OK, OK, OK)] * 5 + [(OVER, OK, OVER)]
    assert answer.statuses[1].current_limit.name == "login"

    # Without x-user, only the address descriptor is sent: 20 a second per address (the peer's epoch-aligned
    # second), tried where a second's end cannot fall between the two calls.
    for attempt in range(20):  # an address of its own each time
        only_address = descriptors_of(route, f"10.2.0.{attempt}", {":path": "/"})
        assert len(only_address) == 1
        while time.time() % 1 > 0.5:
            time.sleep(0.01)
        start_second = int(time.time())
        first = server.call(domain, *only_address, hits=20)
        second = server.call(domain, *only_address)
        if int(time.time()) == start_second:
            break
    else:
        raise AssertionError("no two calls fell in one second in 20 tries")
    assert (first.overall_code, first.statuses[0].limit_remaining) == (OK, 0)
    assert second.overall_code == OVER
