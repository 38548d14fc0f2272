'use strict';
// Rate-limit keys of HTTP requests, framework-neutral (node/lib/http.js). A key spec is one of
//   'ip'              the client address (the framework's own trust-proxy rule), IPv6 masked to ipv6Subnet
//   'user'            the authenticated user (its `id` when it is an object)
//   'header:<name>'   a request header, e.g. 'header:x-api-key'
//   'body:<field>'    a field of the parsed body, e.g. 'body:username' (a body parser must run first)
//   a function        (the framework's request arguments) => a key, or a Promise of one
// or an array of them, combined into one key. A spec that cannot make a key throws a KeyError whose message says
// why; the HTTP layer logs it and answers with onKeyError.

const { clientKey } = require('./client_ip');
const { codes, invalidArgument } = require('./errors');

class KeyError extends Error {
  constructor(message) {
    super(message);
    this.code = codes.NO_KEY;
  }
}

const SPEC_HELP = "key must be a function, 'ip', 'user', 'header:<name>', 'body:<field>' or an array of them";

const isPromise = (v) => v !== null && typeof v === 'object' && typeof v.then === 'function';

// A value as a key: strings and bytes as they are; numbers, bigints and objects with a string form of their own
// (an ObjectId, a URL) as that text. Anything else would put unrelated clients under one key ("undefined",
// "[object Object]", "true"), so it is refused with the reason.
function keyOf(value, what) {
  if (typeof value === 'string') {
    if (value.length === 0) throw new KeyError(`${what} is an empty string`);
    return value;
  }
  if (value instanceof Uint8Array) {
    if (value.length === 0) throw new KeyError(`${what} is empty bytes`);
    return value;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new KeyError(`${what} is ${value}`);
    return String(value);
  }
  if (typeof value === 'bigint') return String(value);
  if (value !== null && typeof value === 'object' && !Array.isArray(value) &&
      typeof value.toString === 'function' && value.toString !== Object.prototype.toString) {
    return keyOf(String(value), what);
  }
  const kind = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object'
    ? 'an object with no string form of its own' : typeof value;
  throw new KeyError(`${what} is ${kind}`);
}

// One spec as a function (a, b) => key | Promise<key>, where (a, b) are the framework's request arguments and
// `access` reads the request: { ip(a), header(a, name), user(a), body(a) }.
function partOf(spec, access, ipv6Subnet) {
  if (typeof spec === 'function') {
    const what = `the key function ${spec.name ? `"${spec.name}" ` : ''}returned a value that`;
    return (a, b) => {
      const v = spec(a, b);
      return isPromise(v) ? v.then((x) => keyOf(x, what)) : keyOf(v, what);
    };
  }
  if (spec === 'ip') {
    return (a) => {
      const ip = access.ip(a);
      if (typeof ip !== 'string' || ip === '') throw new KeyError('the request has no client address');
      return clientKey(ip, ipv6Subnet);
    };
  }
  if (spec === 'user') {
    return (a) => {
      const user = access.user(a);
      if (user === undefined || user === null) throw new KeyError('the request has no authenticated user');
      const id = typeof user === 'object' && !(user instanceof Uint8Array) && 'id' in user ? user.id : user;
      return keyOf(id, 'the authenticated user (its id)');
    };
  }
  if (typeof spec === 'string' && spec.startsWith('header:') && spec.length > 7) {
    const name = spec.slice(7).toLowerCase();
    return (a) => {
      const v = access.header(a, name);
      if (v === undefined || v === '') throw new KeyError(`the request has no ${name} header`);
      return Array.isArray(v) ? v.join(', ') : v;
    };
  }
  if (typeof spec === 'string' && spec.startsWith('body:') && spec.length > 5) {
    const field = spec.slice(5);
    return (a) => {
      const body = access.body(a);
      if (body === undefined || body === null || typeof body !== 'object') {
        throw new KeyError(`the request has no parsed body for "${field}" (is a body parser before the limiter?)`);
      }
      const v = Object.prototype.hasOwnProperty.call(body, field) ? body[field] : undefined;
      if (v === undefined) throw new KeyError(`the request body has no "${field}" field`);
      return keyOf(v, `the body field "${field}"`);
    };
  }
  throw invalidArgument(`${SPEC_HELP}, got ${typeof spec === 'string' ? JSON.stringify(spec) : typeof spec}`);
}

// Parts as one key: a JSON array of their texts (bytes as base64), so that no two different lists give one key.
function combine(parts) {
  return JSON.stringify(parts.map((p) => (typeof p === 'string' ? p : Buffer.from(p).toString('base64'))));
}

// The key maker of a spec (see above): (a, b) => key | Promise<key>, throwing or rejecting with a KeyError (or
// whatever a key function throws).
function keyMaker(spec, access, ipv6Subnet) {
  if (!Array.isArray(spec)) return partOf(spec, access, ipv6Subnet);
  if (spec.length === 0) throw invalidArgument(`${SPEC_HELP}; an empty array makes no key`);
  const parts = spec.map((s) => partOf(s, access, ipv6Subnet));
  return (a, b) => {
    const values = parts.map((p) => p(a, b));
    return values.some(isPromise) ? Promise.all(values).then(combine) : combine(values);
  };
}

// What the spec reads, as text: part of the automatic scope of a limiter (node/lib/http_scope.js). A function is
// known by its source text, which every process running the same code agrees on.
function describeSpec(spec) {
  if (Array.isArray(spec)) return `[${spec.map(describeSpec).join(',')}]`;
  return typeof spec === 'function' ? `fn:${spec.toString()}` : String(spec);
}

const needsBody = (spec) => (Array.isArray(spec) ? spec.some(needsBody) : typeof spec === 'string' && spec.startsWith('body:'));

module.exports = { KeyError, keyMaker, keyOf, describeSpec, needsBody, isPromise };
