"""ratewarden's figures as OpenTelemetry metrics (``pip install 'ratewarden[opentelemetry]'``): observable instruments
of the OpenTelemetry API that read the core's metric families (``ratewarden.metric_families()``, the figures that
``ratewarden.prometheus`` exports) each time the SDK collects, for programs that send their metrics over OTLP.

>>> import ratewarden.opentelemetry
>>> ratewarden.opentelemetry.register()   # on opentelemetry.metrics.get_meter_provider(), or the provider given

The instruments are derived from the core's families, one rule for all (docs/observability.md, "OpenTelemetry"): a
counter's ``_total`` and a unit's suffix (``_seconds``: unit ``s``) are dropped, every ``_`` becomes ``.``; the labels
are the attributes. ``ratewarden_decisions_total{limiter, outcome}`` is the observable counter
``ratewarden.decisions`` (unit ``{decision}``), ``ratewarden_memory_keys{store}`` the observable up-down counter
``ratewarden.memory.keys``, ``ratewarden_hybrid_sync_lag_seconds{store}`` the observable gauge
``ratewarden.hybrid.sync.lag`` (unit ``s``). The API has no asynchronous histogram: the store call durations are the
counters ``ratewarden.store.call.duration.count`` and ``.sum``; their buckets are Prometheus' (ratewarden.prometheus).
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Set, Tuple

try:
    from opentelemetry import metrics
    from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
except ImportError as error:  # pragma: no cover - tested in a subprocess without it
    raise ImportError(
        "ratewarden.opentelemetry needs the opentelemetry-api package: pip install 'ratewarden[opentelemetry]' (or "
        f"pip install opentelemetry-api) ({error})"
    ) from error

from . import _native

__all__ = ["Instrument", "Registration", "instrument_name", "instruments", "register"]

METER_NAME = "ratewarden"


class Instrument(NamedTuple):
    """One instrument ``register`` creates: its OpenTelemetry ``name``, ``kind`` (``"counter"``, ``"up_down_counter"``
    or ``"gauge"``, all observable), ``unit``, ``description``, the core's ``family`` it reads, and ``part``: what of
    the family (``"value"``; a histogram's ``"count"`` or ``"sum"``)."""

    name: str
    kind: str
    unit: str
    description: str
    family: str
    part: str


def instrument_name(family: str, type: str, unit: str) -> str:
    """The OpenTelemetry name of the core's family ``family`` of type ``type`` (``"counter"``, ``"gauge"``,
    ``"histogram"``) and unit ``unit``: without a counter's ``_total``, without the suffix ``_seconds`` of the unit
    ``s``, every ``_`` a ``.``. An OpenTelemetry exporter to Prometheus gives the name back (dots to underscores, the
    unit's suffix, ``_total`` for a counter)."""
    name = family
    if type == "counter" and name.endswith("_total"):
        name = name[: -len("_total")]
    if unit == "s" and name.endswith("_seconds"):
        name = name[: -len("_seconds")]
    return name.replace("_", ".")


def instruments() -> List[Instrument]:
    """Every instrument ``register`` creates, derived from the core's catalog of families
    (``ratewarden._native.metric_catalog()``): a counter is an observable counter; a gauge of things counted (its
    unit is ``{...}``: adding them up across stores means something) an observable up-down counter; a gauge of
    another unit (seconds: a lag does not add up) an observable gauge; a histogram (there is no asynchronous
    histogram in the API) two observable counters, ``<name>.count`` (``{observation}``) and ``<name>.sum`` (its
    unit)."""
    out: List[Instrument] = []
    for family in _native.metric_catalog():
        name = instrument_name(family.name, family.type, family.unit)
        if family.type == "histogram":
            out.append(Instrument(f"{name}.count", "counter", "{observation}",
                                  f"{family.help}: how many (the count of the histogram {family.name})", family.name,
                                  "count"))
            out.append(Instrument(f"{name}.sum", "counter", family.unit,
                                  f"{family.help}: their sum (the sum of the histogram {family.name})", family.name,
                                  "sum"))
        elif family.type == "counter":
            out.append(Instrument(name, "counter", family.unit, family.help, family.name, "value"))
        elif family.unit.startswith("{"):
            out.append(Instrument(name, "up_down_counter", family.unit, family.help, family.name, "value"))
        else:
            out.append(Instrument(name, "gauge", family.unit, family.help, family.name, "value"))
    return out


class _Reading:
    """The core's families, read once for all the instruments of one collection: read again when an instrument asks
    that was already answered from this reading (the next collection, or another reader's), or after a second."""

    MAX_AGE_S = 1.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._families: Dict[str, Any] = {}
        self._answered: Set[str] = set()
        self._taken = float("-inf")

    def family(self, instrument: str, family: str) -> Optional[Any]:
        with self._lock:
            now = time.monotonic()
            if instrument in self._answered or now - self._taken > self.MAX_AGE_S:
                self._families = {f.name: f for f in _native.metric_families()}
                self._answered = set()
                self._taken = now
            self._answered.add(instrument)
            return self._families.get(family)


def _observations(instrument: Instrument, family: Any) -> Iterator[Observation]:
    if family is None:  # none yet: no limiter, or no store of that kind, in the process so far
        return
    count = instrument.unit.startswith("{")  # things counted are whole numbers
    if instrument.part == "value":
        for labels, value in family.samples:
            yield Observation(int(value) if count else value, labels)
    elif instrument.part == "count":
        for h in family.histograms:
            yield Observation(h.count, h.labels)
    else:
        for h in family.histograms:
            yield Observation(h.sum, h.labels)


class Registration:
    """The instruments ``register`` made on one meter provider. ``unregister()`` stops them (the API cannot remove an
    instrument: they stay, reporting nothing); ``register`` on the same provider starts them again."""

    def __init__(self, meter_provider: MeterProvider) -> None:
        self._provider = weakref.ref(meter_provider)
        self._active = True
        self._reading = _Reading()
        self.instruments: Tuple[Instrument, ...] = tuple(instruments())
        meter = meter_provider.get_meter(METER_NAME, _native.version())
        create = {
            "counter": meter.create_observable_counter,
            "up_down_counter": meter.create_observable_up_down_counter,
            "gauge": meter.create_observable_gauge,
        }
        for instrument in self.instruments:
            create[instrument.kind](instrument.name, callbacks=[self._callback(instrument)], unit=instrument.unit,
                                    description=instrument.description)

    def _callback(self, instrument: Instrument) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            if not self._active:
                return []
            return list(_observations(instrument, self._reading.family(instrument.name, instrument.family)))

        return observe

    @property
    def meter_provider(self) -> Optional[MeterProvider]:
        return self._provider()

    @property
    def active(self) -> bool:
        return self._active

    def unregister(self) -> bool:
        """Stops the instruments: from the next collection on they report nothing. False if they were stopped."""
        with _lock:
            was, self._active = self._active, False
            return was

    def __repr__(self) -> str:
        return f"Registration({len(self.instruments)} instruments, active={self._active})"


_lock = threading.Lock()
_registered: "weakref.WeakKeyDictionary[Any, Registration]" = weakref.WeakKeyDictionary()
_global: Optional[Registration] = None  # the one register() made on the global provider, whatever it was then


def register(meter_provider: Optional[MeterProvider] = None) -> Registration:
    """Creates the observable instruments of ratewarden's figures on ``meter_provider``
    (``opentelemetry.metrics.get_meter_provider()`` by default), once: a second call for the same provider, or for
    the global one again, returns the first registration (started again if it was unregistered). Before the SDK's
    provider is set, the global provider is the API's proxy, which hands the instruments over to the provider
    ``set_meter_provider`` sets later: register() may come first. The instruments read the core's figures at each
    collection."""
    global _global
    global_provider = metrics.get_meter_provider()
    provider = global_provider if meter_provider is None else meter_provider
    with _lock:
        registration = _registered.get(provider)
        if registration is None and provider is global_provider:
            registration = _global  # made on the proxy, which handed its instruments over to this provider
        if registration is None:
            registration = _registered[provider] = Registration(provider)
        if provider is global_provider and _global is None:
            _global = registration
        registration._active = True
        return registration
