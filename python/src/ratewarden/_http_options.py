"""The HTTP layer's options: the one option set of every adapter (``Options``, read and checked once) and a limit
as declared (``LimitSpec``, checked where it is written)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, Iterable, Mapping, Optional, Union

from ._client_key import DEFAULT_IPV6_SUBNET, check_ipv6_subnet
from ._errors import InvalidArgumentError
from ._headers import STYLES, sf_string
from ._limiter import open_store
from ._limiter_name import rates_text
from ._lists import KeyList
from ._native import Store, algorithms, check_policy, check_prefix
from .keys import KeyPart

__all__ = ["COUNT_WHEN", "OPTIONS", "LimitSpec", "Options"]

STORE_ERROR_CHOICES = ("allow", "deny", "raise")
KEY_ERROR_CHOICES = ("reject", "skip", "raise")
REFUSAL_CHOICES = ("text", "problem")
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")  # RFC 9110 tchar

# The one option set of every adapter: the keyword of RateLimiter(...) / the middleware, and (upper-cased) the key of
# Flask's RATEWARDEN_<NAME> configuration and of Django's settings.RATEWARDEN dictionary.
OPTIONS: Dict[str, Any] = {
    "enabled": True,
    "store": "memory://",
    "application": None,
    "default": None,
    "algorithm": "fixed_window",
    "prefix": None,
    "on_store_error": "allow",
    "on_key_error": "reject",
    "headers": True,
    "legacy_headers": False,
    "proxy_count": 0,
    "ipv6_subnet": DEFAULT_IPV6_SUBNET,
    "shadow": False,
    "refusal": "text",
    "store_failure_header": "RateLimit-Skipped",
    "skip": None,
    "allow_list": None,
    "deny_list": None,
    "block_duration": None,
}

# count_when's names (Node's countWhen takes the same): count failed (4xx, 5xx) or successful responses only.
COUNT_WHEN: Dict[str, Callable[[int], bool]] = {"failure": lambda status: status >= 400,
                                                "success": lambda status: status < 400}


def _choice(name: str, value: Any, choices: Iterable[str]) -> Any:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def _checked_prefix(name: str, prefix: Any) -> Optional[str]:
    """``prefix`` as the core checks a limiter's."""
    if prefix is None:
        return None
    if not isinstance(prefix, str):
        raise ValueError(f"{name} must be a str or None, got {prefix!r}")
    try:
        check_prefix(prefix)
    except ValueError as error:  # an InvalidArgumentError, or a str that UTF-8 cannot encode
        raise InvalidArgumentError(f"{name}: {error}") from None
    return prefix


def _header_style(name: str, value: Union[bool, str]) -> Optional[str]:
    """``headers``: a style, or a truth value as before styles existed (true: the newest draft's form)."""
    if not isinstance(value, str):
        return "draft-8" if value else None
    return _choice(name, value, STYLES)


@dataclass(frozen=True)
class Options:
    """The options, checked; ``name(option)`` gives the name the user wrote (``RATEWARDEN_STORE``, ``store``...)."""

    enabled: bool
    store: Store
    application: Optional[str]
    default: Optional[str]
    algorithm: str
    prefix: Optional[str]
    on_store_error: str
    on_key_error: str
    headers: Optional[str]
    legacy_headers: bool
    proxy_count: int
    ipv6_subnet: int
    shadow: bool
    refusal: Union[str, Callable[..., Any]]
    store_failure_header: Optional[str]
    skip: Optional[Callable[..., Any]]
    allow_list: Optional[KeyList]
    deny_list: Optional[KeyList]
    block_duration: Optional[float]

    @staticmethod
    def read(values: Mapping[str, Any], name: Callable[[str], str]) -> "Options":
        """Options from ``values`` (every key of OPTIONS); a bad one raises a ValueError that says ``name(key)``."""
        unknown = set(values) - set(OPTIONS)
        if unknown:
            raise ValueError(f"unknown option{'s' if len(unknown) > 1 else ''}: {', '.join(map(name, sorted(unknown)))}")
        v = {**OPTIONS, **values}
        check_ipv6_subnet(name("ipv6_subnet"), v["ipv6_subnet"])
        proxies = v["proxy_count"]
        if isinstance(proxies, bool) or not isinstance(proxies, int) or proxies < 0:
            raise ValueError(f"{name('proxy_count')} must be an integer >= 0, got {proxies!r}")
        refusal = v["refusal"]
        if not callable(refusal):
            _choice(name("refusal"), refusal, REFUSAL_CHOICES)
        if v["skip"] is not None and not callable(v["skip"]):
            raise ValueError(f"{name('skip')} must be a function of the request, got {v['skip']!r}")
        header = v["store_failure_header"]
        if header is not None and (not isinstance(header, str) or not header or not set(header) <= _TOKEN):
            raise ValueError(f"{name('store_failure_header')} must be a header name (letters, digits and "
                             f"!#$%&'*+-.^_`|~) or None, got {header!r}")
        for option in ("allow_list", "deny_list"):
            if v[option] is not None and not isinstance(v[option], KeyList):
                raise ValueError(f"{name(option)} must be a ratewarden.KeyList, got {v[option]!r}")
        block = v["block_duration"]
        if block is not None and (isinstance(block, bool) or not isinstance(block, (int, float)) or not block > 0):
            raise ValueError(f"{name('block_duration')} must be a number of seconds > 0, got {block!r}")
        store = v["store"]
        if not isinstance(store, Store):
            try:
                store = open_store(store)
            except (TypeError, ValueError) as error:
                raise InvalidArgumentError(f"{name('store')}: {error}") from None
        options = Options(
            enabled=bool(v["enabled"]),
            store=store,
            application=v["application"],
            default=v["default"],
            algorithm=_choice(name("algorithm"), v["algorithm"], algorithms()),  # the core's table
            prefix=_checked_prefix(name("prefix"), v["prefix"]),
            on_store_error=_choice(name("on_store_error"), v["on_store_error"], STORE_ERROR_CHOICES),
            on_key_error=_choice(name("on_key_error"), v["on_key_error"], KEY_ERROR_CHOICES),
            headers=_header_style(name("headers"), v["headers"]),
            legacy_headers=bool(v["legacy_headers"]),
            proxy_count=proxies,
            ipv6_subnet=v["ipv6_subnet"],
            shadow=bool(v["shadow"]),
            refusal=refusal,
            store_failure_header=header,
            skip=v["skip"],
            allow_list=v["allow_list"],
            deny_list=v["deny_list"],
            block_duration=block,
        )
        for option in ("application", "default"):  # a bad policy fails here, at start-up
            policy = getattr(options, option)
            if policy is not None:
                try:
                    check_policy(policy, algorithm=options.algorithm)
                except (TypeError, ValueError) as error:
                    raise InvalidArgumentError(f"{name(option)}: {error}") from None
        return options


@dataclass(eq=False)
class LimitSpec:
    """One limit as declared (a decorator, a dependency, the default or app-wide limit); bound to a store later."""

    policy: str
    key: Any  # None: the adapter's default key; a KeyPart; or a function of the request (the adapter's form)
    scope: Optional[str]  # a shared limit's scope; None: the limit counts on its own
    name: Optional[str]  # its name in the fields; None: the route's
    cost: Union[int, Callable[..., int]] = 1
    methods: Optional[FrozenSet[str]] = None
    algorithm: Optional[str] = None
    burst: Optional[int] = None
    on_store_error: Optional[str] = None
    shadow: Optional[bool] = None
    count_when: Optional[Callable[[int], bool]] = None  # of the response's status: false refunds the request
    rates: str = ""  # its rates as the core writes them ("5/60s"): the second half of its limiters' names

    @staticmethod
    def make(
        policy: str,
        *,
        key: Any = None,
        scope: Optional[str] = None,
        name: Optional[str] = None,
        cost: Union[int, Callable[..., int]] = 1,
        methods: Optional[Iterable[str]] = None,
        algorithm: Optional[str] = None,
        burst: Optional[int] = None,
        on_store_error: Optional[str] = None,
        shadow: Optional[bool] = None,
        count_when: Optional[Callable[[int], bool]] = None,
    ) -> "LimitSpec":
        """A spec, checked where it is written (import time), not on the first request."""
        policies = check_policy(policy, algorithm=algorithm or "fixed_window", burst=burst)
        if on_store_error is not None:
            _choice("on_store_error", on_store_error, STORE_ERROR_CHOICES)
        for text in (scope, name):
            if text is not None:
                sf_string(text)
        if key is not None and not isinstance(key, KeyPart) and not callable(key):
            raise TypeError(f"key must be a function or a ratewarden.keys part, got {key!r}")
        if isinstance(methods, str):
            methods = [methods]
        count_when = COUNT_WHEN.get(count_when, count_when) if isinstance(count_when, str) else count_when
        if count_when is not None and not callable(count_when):
            raise TypeError(f"count_when must be 'failure', 'success' or a function of the response's status code, "
                            f"got {count_when!r}")
        return LimitSpec(policy, key, scope, name, cost,
                         frozenset(m.upper() for m in methods) if methods is not None else None,
                         algorithm, burst, on_store_error, shadow, count_when, rates_text(policies))
