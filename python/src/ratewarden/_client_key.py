"""Client addresses as rate-limit keys, framework-neutral (the same rule as Node's ``clientKey``; both run
tests/conformance/client_keys.json)."""

from __future__ import annotations

import ipaddress

__all__ = ["DEFAULT_IPV6_SUBNET", "check_ipv6_subnet", "client_key"]

# An IPv6 client usually holds a whole prefix (ISPs delegate a /56 to a home, often a /48 to a site): keying single
# addresses would let it rotate through 2^72 keys. /56 is express-rate-limit's default as well.
DEFAULT_IPV6_SUBNET = 56


def check_ipv6_subnet(name: str, value: object) -> int:
    """``value`` if it is a prefix length that client_key accepts, else a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 8 <= value <= 128:
        raise ValueError(f"{name} must be an integer between 8 and 128, got {value!r}")
    return value


def client_key(address: str, ipv6_subnet: int = DEFAULT_IPV6_SUBNET) -> str:
    """The key of a client address: IPv4 as is, an IPv4-mapped IPv6 address (``::ffff:1.2.3.4``) as its IPv4
    address, any other IPv6 address as its /ipv6_subnet network in RFC 5952 text (``2001:db8:abcd:1200::/56``; a zone
    id is dropped), and anything that is not an IP address unchanged."""
    if ":" not in address:  # IPv4 or not an address: unchanged either way (and no parse: the common case is cheap)
        return address
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv4Address):
        return address
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.IPv6Network((ip, ipv6_subnet), strict=False))
