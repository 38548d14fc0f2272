'use strict';
// Client addresses as rate-limit keys. An IPv6 host often owns a whole prefix (a /64, often a /56), so limiting
// single IPv6 addresses lets one client rotate through millions of keys: the key is the address masked to its
// /subnet. IPv4-mapped IPv6 addresses (::ffff:1.2.3.4) are their IPv4 address.

const net = require('node:net');

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

function clientKey(ip, ipv6Subnet = 56) {
  if (!net.isIPv6(ip)) return ip;
  const g = groupsOf(ip);
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return `${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`;
  }
  for (let i = 0; i < 8; i++) {
    const keep = Math.min(16, Math.max(0, ipv6Subnet - 16 * i));
    g[i] &= keep === 0 ? 0 : (0xffff << (16 - keep)) & 0xffff;
  }
  return `${g.map((x) => x.toString(16)).join(':')}/${ipv6Subnet}`;
}

module.exports = { clientKey };
