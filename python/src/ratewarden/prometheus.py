"""ratewarden's figures for prometheus_client (``pip install 'ratewarden[prometheus]'``): a collector that turns the
core's metric families (``ratewarden.metric_families()``: their names, types, help texts and labels are decided
there, for every exporter) into prometheus_client's, at each scrape.

>>> import ratewarden.prometheus
>>> ratewarden.prometheus.register()          # into prometheus_client.REGISTRY: served by whatever serves it

Several worker processes (gunicorn, uvicorn --workers): each process counts its own decisions, and
prometheus_client's multiprocess mode does not carry custom collectors. ``start_worker_server(ports)`` serves each
worker's figures on a port of its own (docs/python.md, "Metrics and events").
"""

from __future__ import annotations

import errno
import threading
import weakref
from typing import Any, Iterable, Iterator, List, Optional, Union

try:
    import prometheus_client
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
    from prometheus_client.registry import REGISTRY, CollectorRegistry
    from prometheus_client.utils import floatToGoString
except ImportError as error:  # pragma: no cover - tested in a subprocess without it
    raise ImportError(
        "ratewarden.prometheus needs the prometheus_client package: pip install 'ratewarden[prometheus]' (or "
        f"pip install prometheus-client) ({error})"
    ) from error

from . import _native

__all__ = ["RatewardenCollector", "register", "start_worker_server"]


def _family(family: _native.MetricFamily) -> Metric:
    """One of the core's families as prometheus_client's."""
    names: List[str] = []
    if family.samples:
        names = list(family.samples[0][0])
    elif family.histograms:
        names = list(family.histograms[0].labels)
    if family.type == "histogram":
        histogram = HistogramMetricFamily(family.name, family.help, labels=names)
        for h in family.histograms:
            histogram.add_metric([h.labels[n] for n in names], [(floatToGoString(le), n) for le, n in h.buckets],
                                 h.sum)
        return histogram
    if family.type == "counter":
        # prometheus_client names a counter without its _total, which it adds to the sample.
        name = family.name[:-len("_total")] if family.name.endswith("_total") else family.name
        metric: Union[CounterMetricFamily, GaugeMetricFamily] = CounterMetricFamily(name, family.help, labels=names)
    else:
        metric = GaugeMetricFamily(family.name, family.help, labels=names)
    for labels, value in family.samples:
        metric.add_metric([labels[n] for n in names], value)
    return metric


class RatewardenCollector:
    """The process's figures (every limiter name's and store name's: ``ratewarden.limiter_stats()``,
    ``ratewarden.store_stats()``), read from the core at each ``collect()``."""

    def collect(self) -> Iterator[Metric]:
        for family in _native.metric_families():
            yield _family(family)

    def describe(self) -> Iterable[Metric]:
        # Names come and go with the limiters and stores the program makes: nothing to reserve at registration.
        return ()


_lock = threading.Lock()
_registered: "weakref.WeakKeyDictionary[Any, RatewardenCollector]" = weakref.WeakKeyDictionary()


def register(registry: Optional[CollectorRegistry] = None) -> RatewardenCollector:
    """Registers the collector of ratewarden's figures in ``registry`` (``prometheus_client.REGISTRY`` by default),
    once: a second call for the same registry returns the first collector. Returns it (``registry.unregister(it)``
    removes it)."""
    registry = REGISTRY if registry is None else registry
    with _lock:
        collector = _registered.get(registry)
        if collector is None:
            collector = _registered[registry] = RatewardenCollector()
            registry.register(collector)  # type: ignore[arg-type]
        return collector


def start_worker_server(ports: Union[int, Iterable[int]], addr: str = "0.0.0.0",
                        registry: Optional[CollectorRegistry] = None) -> int:
    """Serves this process's figures (``/metrics`` in Prometheus' text format, on a thread of prometheus_client's)
    on the first port of ``ports`` that no other process holds, and returns it. Each worker of a server that runs
    several (gunicorn ``-w N``, ``uvicorn --workers N``) calls it once as it starts, with the same ``range(P, P + N)``:
    each takes a port of its own (a worker that replaces one that died takes the port it freed), and Prometheus
    scrapes the N ports, each a target of its own (``instance``); ``sum without (instance) (...)`` adds them up.

    ``registry``: what to serve; by default a registry of ratewarden's figures only (``register`` adds them to a
    registry given). An ``OSError`` when every port is taken."""
    if registry is None:
        registry = CollectorRegistry(auto_describe=True)
    register(registry)
    candidates = [ports] if isinstance(ports, int) else list(ports)
    if not candidates:
        raise ValueError("ports is empty")
    for port in candidates:
        try:
            prometheus_client.start_http_server(port, addr=addr, registry=registry)
        except OSError as error:
            if error.errno != errno.EADDRINUSE:
                raise
            continue
        return port
    raise OSError(errno.EADDRINUSE, f"ratewarden.prometheus: every port of {candidates} is in use: give each worker "
                  "a port (as many ports as workers)")
