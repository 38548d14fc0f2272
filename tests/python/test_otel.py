"""ratewarden.opentelemetry with the real OpenTelemetry SDK (opentelemetry-sdk's InMemoryMetricReader): the points
collected after a known load equal what was done, on the memory store and a real redis-server (hybrid mode too); the
number of series does not grow with the keys; registering twice, unregistering and registering again; the global
meter provider set after register(); the names an OpenTelemetry exporter to Prometheus (opentelemetry-exporter-
prometheus) gives back, against ratewarden.prometheus' own; a clear error without opentelemetry-api."""

from __future__ import annotations

import gc
import itertools
import os
import subprocess
import sys
import textwrap
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import Gauge, InMemoryMetricReader, Sum
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import ratewarden
import ratewarden.opentelemetry
import ratewarden.prometheus
from ratewarden.opentelemetry import Instrument, instrument_name
from redis_server import RedisServer

_names = itertools.count()


def unique(what: str) -> str:
    """A limiter name of the test's own: names count for the whole process (other modules' tests included)."""
    return f"otel-{what}-{os.getpid()}-{next(_names)}"


Point = Tuple[str, Tuple[Tuple[str, str], ...]]  # (instrument name, sorted attributes)


class Collected:
    """One collection of a reader: {(instrument, attributes): value}, and each instrument's metric."""

    def __init__(self, reader: InMemoryMetricReader) -> None:
        self.points: Dict[Point, float] = {}
        self.metrics: Dict[str, Any] = {}
        data = reader.get_metrics_data()
        for rm in data.resource_metrics if data is not None else []:
            for sm in rm.scope_metrics:
                if sm.scope.name != "ratewarden":
                    continue
                assert sm.scope.version == ratewarden.__version__
                for metric in sm.metrics:
                    assert metric.name not in self.metrics, metric.name  # one stream per instrument
                    self.metrics[metric.name] = metric
                    for p in metric.data.data_points:
                        self.points[(metric.name, tuple(sorted(p.attributes.items())))] = p.value

    def value(self, instrument: str, **attributes: str) -> float:
        return self.points[(instrument, tuple(sorted(attributes.items())))]

    def series(self, instrument: str, **attributes: str) -> Dict[Point, float]:
        """The points of `instrument` whose attributes include `attributes`."""
        want = set(attributes.items())
        return {k: v for k, v in self.points.items() if k[0] == instrument and want <= set(k[1])}


@pytest.fixture
def reader() -> Iterator[InMemoryMetricReader]:
    """A meter provider of the test's own, with ratewarden's instruments on it."""
    memory = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[memory])
    ratewarden.opentelemetry.register(provider)
    yield memory
    provider.shutdown()


def by_name() -> Dict[str, Instrument]:
    return {i.name: i for i in ratewarden.opentelemetry.instruments()}


# --- the rule --------------------------------------------------------------------------------------------------


def test_the_instruments_are_the_core_families_by_one_rule() -> None:
    instruments = by_name()
    # The series the issue names, as instruments.
    assert instruments["ratewarden.decisions"][1:3] == ("counter", "{decision}")
    assert instruments["ratewarden.store.call.duration.count"][1:3] == ("counter", "{observation}")
    assert instruments["ratewarden.store.call.duration.sum"][1:3] == ("counter", "s")
    assert instruments["ratewarden.store.errors"][1:3] == ("counter", "{call}")
    assert instruments["ratewarden.circuit.open"][1:3] == ("up_down_counter", "{server}")
    assert instruments["ratewarden.memory.keys"][1:3] == ("up_down_counter", "{state}")
    assert instruments["ratewarden.memory.evictions"][1:3] == ("counter", "{state}")
    assert instruments["ratewarden.hybrid.sync.lag"][1:3] == ("gauge", "s")
    # Every family of the catalog, and nothing else; each name by the rule, none twice.
    catalog = ratewarden._native.metric_catalog()
    assert {i.family for i in instruments.values()} == {f.name for f in catalog}
    assert len(instruments) == len(catalog) + 1  # the histogram is two counters
    for f in catalog:
        assert f.unit == "s" or (f.unit.startswith("{") and f.unit.endswith("}")), f
        assert f.name.endswith("_seconds") == (f.unit == "s"), f
        base = instrument_name(f.name, f.type, f.unit)
        assert "_" not in base and base.startswith("ratewarden.")
        # Back to Prometheus as OpenTelemetry's exporters write a name: dots to underscores, the unit's suffix, and
        # _total for a counter.
        back = base.replace(".", "_") + ("_seconds" if f.unit == "s" else "") + ("_total" if f.type == "counter" else "")
        assert back == f.name or f.type == "histogram", (f.name, base)
    assert instrument_name("ratewarden_decisions_total", "counter", "{decision}") == "ratewarden.decisions"
    assert instrument_name("ratewarden_hybrid_sync_lag_seconds", "gauge", "s") == "ratewarden.hybrid.sync.lag"
    # The families the process has now are all in the catalog, with the catalog's types and units.
    known = {f.name: (f.type, f.unit) for f in catalog}
    for f in ratewarden.metric_families():
        assert known[f.name] == (f.type, f.unit), f.name


# --- after a known load ----------------------------------------------------------------------------------------


def test_a_known_load_on_the_memory_store(reader: InMemoryMetricReader) -> None:
    name = unique("login")
    store = ratewarden.Store("memory://?max_keys=3")
    limiter = ratewarden.Limiter("5/minute", store, name=name)
    allowed, denied = 5, 7
    for _ in range(allowed + denied):
        limiter.hit("alice")
    limiter.peek("alice")  # not a decision
    for user in ("bob", "carol", "dave"):  # 4 keys in a store of 3: one live eviction
        limiter.hit(user, 2)
    got = Collected(reader)
    assert got.value("ratewarden.decisions", limiter=name, outcome="allowed") == allowed + 3
    assert got.value("ratewarden.decisions", limiter=name, outcome="denied") == denied
    assert got.value("ratewarden.decision.cost", limiter=name) == allowed + 3 * 2
    assert got.value("ratewarden.fallback.decisions", limiter=name) == 0
    s = store.stats()
    assert got.value("ratewarden.memory.keys", store=s.name) == s.keys == 3
    assert got.value("ratewarden.memory.max.keys", store=s.name) == 3
    assert got.value("ratewarden.memory.evictions", store=s.name, reason="live") == 1
    assert got.value("ratewarden.memory.evictions", store=s.name, reason="expired") == 0
    # Each instrument's kind, unit and help, as the SDK exports them.
    decisions = got.metrics["ratewarden.decisions"]
    assert isinstance(decisions.data, Sum) and decisions.data.is_monotonic and decisions.unit == "{decision}"
    assert decisions.description.startswith("Decisions (hits and reservations)")
    keys = got.metrics["ratewarden.memory.keys"]
    assert isinstance(keys.data, Sum) and not keys.data.is_monotonic
    assert isinstance(got.points[("ratewarden.decisions", (("limiter", name), ("outcome", "denied")))], int)
    # Later load, next collection: the counters moved on by exactly that.
    limiter.hit("alice")
    again = Collected(reader)
    assert again.value("ratewarden.decisions", limiter=name, outcome="denied") == denied + 1


def test_store_families_on_redis_and_a_hybrid_mode(reader: InMemoryMetricReader, redis: RedisServer) -> None:
    name = unique("shared")
    # A URL no other test opens: a store's figures count for the process, by its URL.
    store = ratewarden.Store(redis.url + "?pool=2&connect_timeout=997ms")
    limiter = ratewarden.Limiter("4/minute", store, prefix=name, name=name)
    for _ in range(6):
        limiter.hit("k")
    hybrid = ratewarden.Store(redis.url + "?mode=async&sync=20ms")
    fast = ratewarden.Limiter("100/minute", hybrid, prefix=name, name=unique("fast"))
    for _ in range(3):
        fast.hit("k")
    got = Collected(reader)
    assert got.value("ratewarden.decisions", limiter=name, outcome="allowed") == 4
    assert got.value("ratewarden.decisions", limiter=name, outcome="denied") == 2
    url = store.url
    assert got.value("ratewarden.store.call.duration.count", store=url, outcome="ok") == 6  # denials are answers
    assert 0 < got.value("ratewarden.store.call.duration.sum", store=url, outcome="ok") < 6 * 0.25
    for outcome in ("timeout", "unavailable", "error"):
        assert got.value("ratewarden.store.call.duration.count", store=url, outcome=outcome) == 0
        assert got.value("ratewarden.store.errors", store=url, kind=outcome) == 0
    assert got.value("ratewarden.circuit.open", store=url) == 0
    assert got.value("ratewarden.circuit.openings", store=url) == 0
    assert 1 <= got.value("ratewarden.store.connections", store=url) <= 2
    assert got.metrics["ratewarden.store.call.duration.sum"].unit == "s"
    # The hybrid mode's figures: its lag is a gauge in seconds (-1 until the first read of the reset log).
    lag = got.value("ratewarden.hybrid.sync.lag", store=hybrid.url)
    assert lag == -1 or 0 <= lag < 60
    assert isinstance(got.metrics["ratewarden.hybrid.sync.lag"].data, Gauge)
    assert ("ratewarden.hybrid.local.decisions", (("answer", "allowed"), ("store", hybrid.url))) in got.points
    # The same figures as ratewarden.prometheus', series for series (those of the limiter and the store that are
    # at rest: the hybrid mode's go on in the background).
    families = {f.name: f for f in ratewarden.metric_families()}
    for (instrument, attributes), value in got.points.items():
        if ("limiter", name) not in attributes and ("store", url) not in attributes:
            continue
        i = by_name()[instrument]
        f = families[i.family]
        if i.part == "value":
            assert (dict(attributes), value) in f.samples, instrument
        else:
            h = next(h for h in f.histograms if h.labels == dict(attributes))
            assert value == (h.count if i.part == "count" else h.sum), instrument


def test_the_series_do_not_grow_with_the_keys(reader: InMemoryMetricReader) -> None:
    name = unique("many-keys")
    store = ratewarden.Store("memory://?max_keys=100000")
    limiter = ratewarden.Limiter("1/minute", store, name=name)
    limiter.hit("first")
    gc.collect()  # the stores of earlier tests gone now, not in the middle (a store's gauges go with it)
    before = Collected(reader)
    for i in range(10_000):
        limiter.hit(f"user-{i}")
    after = Collected(reader)
    assert len(after.points) == len(before.points)
    assert set(after.points) == set(before.points)
    assert after.value("ratewarden.decisions", limiter=name, outcome="allowed") == 10_001
    assert after.value("ratewarden.memory.keys", store=store.stats().name) == 10_001
    assert len(after.series("ratewarden.decisions", limiter=name)) == 2  # allowed, denied: never a key


# --- registration ----------------------------------------------------------------------------------------------


def test_register_twice_unregister_and_register_again() -> None:
    memory = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[memory])
    first = ratewarden.opentelemetry.register(provider)
    assert ratewarden.opentelemetry.register(provider) is first  # once per provider
    assert first.meter_provider is provider and first.active
    assert [i.name for i in first.instruments] == list(by_name())
    name = unique("again")
    limiter = ratewarden.Limiter("1/minute", name=name)
    limiter.hit("k")
    assert Collected(memory).value("ratewarden.decisions", limiter=name, outcome="allowed") == 1

    assert first.unregister() and not first.unregister()
    assert not first.active
    assert Collected(memory).points == {}  # the instruments stay, with nothing to report

    limiter.hit("k")
    assert ratewarden.opentelemetry.register(provider) is first and first.active
    got = Collected(memory)
    assert got.value("ratewarden.decisions", limiter=name, outcome="denied") == 1  # the core kept counting

    # Another provider has instruments of its own, and the same figures.
    other_reader = InMemoryMetricReader()
    other = MeterProvider(metric_readers=[other_reader])
    assert ratewarden.opentelemetry.register(other) is not first
    assert Collected(other_reader).value("ratewarden.decisions", limiter=name, outcome="denied") == 1
    provider.shutdown()
    other.shutdown()


def test_two_readers_of_one_provider_each_get_every_point() -> None:
    """Each reader collects on its own, calling every callback: both see the same, current figures."""
    a, b = InMemoryMetricReader(), InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[a, b])
    ratewarden.opentelemetry.register(provider)
    name = unique("two-readers")
    limiter = ratewarden.Limiter("2/minute", name=name)
    for round_ in range(1, 4):
        limiter.hit("k")
        for got in (Collected(a), Collected(b)):
            assert got.value("ratewarden.decisions", limiter=name, outcome="allowed") == min(round_, 2)
            assert got.value("ratewarden.decisions", limiter=name, outcome="denied") == max(round_ - 2, 0)
    provider.shutdown()


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)


def test_the_global_meter_provider_set_after_register() -> None:
    """register() with no provider takes the API's global one: instruments made before the SDK's provider is set
    are carried over to it (the API's proxy), so register() may come first. A process of its own: the global
    provider can be set once."""
    done = _run("""
        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        import ratewarden, ratewarden.opentelemetry

        registration = ratewarden.opentelemetry.register()
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        assert ratewarden.opentelemetry.register() is registration
        limiter = ratewarden.Limiter("2/minute", name="global")
        for _ in range(3):
            limiter.hit("k")
        for rm in reader.get_metrics_data().resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == "ratewarden.decisions":
                        for p in m.data.data_points:
                            print(p.attributes["outcome"], p.value)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["allowed 2", "denied 1"]


def test_without_opentelemetry_api() -> None:
    done = _run("""
        import sys
        sys.modules["opentelemetry"] = None  # as if it were not installed
        try:
            import ratewarden.opentelemetry
        except ImportError as error:
            print(error)
    """)
    assert done.returncode == 0, done.stderr
    assert "pip install 'ratewarden[opentelemetry]'" in done.stdout, done.stdout


# --- back to Prometheus through OpenTelemetry's exporter -----------------------------------------------------------


def scraped(text: str) -> Dict[str, Dict[str, float]]:
    out: Dict[str, Dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()) if not k.startswith("otel_"))
            out.setdefault(sample.name, {})[labels] = sample.value
    return out


def test_prometheus_names_through_the_opentelemetry_exporter(redis: RedisServer) -> None:
    """opentelemetry-exporter-prometheus turns the instruments back into Prometheus series: every family's name is
    ratewarden.prometheus' own, but the store call durations, whose count and sum come as two counters."""
    from opentelemetry.exporter.prometheus import PrometheusMetricReader

    through_otel = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(disable_target_info=True,
                                                                    registry=through_otel)])
    ratewarden.opentelemetry.register(provider)
    direct = CollectorRegistry()
    ratewarden.prometheus.register(direct)
    name = unique("round-trip")
    ratewarden.Limiter("1/minute", ratewarden.Store(redis.url + "?mode=local_first"), prefix=name,
                       name=name).hit("k")
    ratewarden.Limiter("1/minute", name=name).hit("k")
    otel, ours = scraped(generate_latest(through_otel).decode()), scraped(generate_latest(direct).decode())
    histogram = "ratewarden_store_call_duration_seconds"
    expected = {n for n in ours if not n.startswith(histogram)}
    expected |= {"ratewarden_store_call_duration_count_total", "ratewarden_store_call_duration_sum_seconds_total"}
    assert set(otel) == expected
    label = f"limiter={name},outcome=allowed"
    assert otel["ratewarden_decisions_total"][label] == ours["ratewarden_decisions_total"][label] == 2
    for series, value in ours["ratewarden_memory_keys"].items():
        assert otel["ratewarden_memory_keys"][series] == value
    assert otel["ratewarden_store_call_duration_count_total"] == ours[f"{histogram}_count"]
    provider.shutdown()


def test_the_instruments_listed_by_kind() -> None:
    """A table for the docs: every instrument by kind (printed with -s)."""
    kinds: Dict[str, List[str]] = {}
    for i in ratewarden.opentelemetry.instruments():
        kinds.setdefault(i.kind, []).append(f"{i.name} [{i.unit}]")
    assert set(kinds) == {"counter", "up_down_counter", "gauge"}
    print("\n".join(f"{k}: {', '.join(v)}" for k, v in kinds.items()))
