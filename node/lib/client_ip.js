'use strict';
// Client addresses as rate-limit keys (the same rule as Python's ratewarden._client_key; both run
// tests/conformance/client_keys.json). An IPv6 client usually holds a whole prefix (ISPs delegate a /56 to a home),
// so keying single addresses would let it rotate through millions of keys: the key is the address masked to its
// /subnet, in RFC 5952 text. IPv4-mapped IPv6 addresses (::ffff:1.2.3.4) are their IPv4 address.

const net = require('node:net');

const DEFAULT_IPV6_SUBNET = 56;

// The 8 16-bit groups of a valid IPv6 address (zone id and embedded IPv4 tail allowed).
function groupsOf(ip) {
  let text = ip.split('%')[0];
  const dot = text.indexOf('.');
  if (dot !== -1) {
    const tail = text.lastIndexOf(':');
    const v4 = text.slice(tail + 1).split('.').map(Number);
    text = `${text.slice(0, tail + 1)}${((v4[0] << 8) | v4[1]).toString(16)}:${((v4[2] << 8) | v4[3]).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const parse = (part) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  return [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
}

// RFC 5952 text: lower-case hex without leading zeros, the longest run of two or more zero groups (the first of
// equals) as "::".
function ipv6Text(g) {
  let start = -1;
  let length = 1;
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > length) [start, length] = [i, j - i];
  }
  const hex = (part) => part.map((x) => x.toString(16)).join(':');
  return start === -1 ? hex(g) : `${hex(g.slice(0, start))}::${hex(g.slice(start + length))}`;
}

function clientKey(ip, ipv6Subnet = DEFAULT_IPV6_SUBNET) {
  // An address without ':' is not IPv6: most clients are IPv4, and this spares them isIPv6's long regular expression.
  if (typeof ip === 'string' && ip.indexOf(':') === -1 || !net.isIPv6(ip)) return ip;
  const g = groupsOf(ip);
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return `${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`;
  }
  for (let i = 0; i < 8; i++) {
    const keep = Math.min(16, Math.max(0, ipv6Subnet - 16 * i));
    g[i] &= keep === 0 ? 0 : (0xffff << (16 - keep)) & 0xffff;
  }
  return `${ipv6Text(g)}/${ipv6Subnet}`;
}

module.exports = { DEFAULT_IPV6_SUBNET, clientKey };
