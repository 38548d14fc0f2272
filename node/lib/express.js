'use strict';
// Express middleware in the style of express-rate-limit: const { rateLimit } = require('ratewarden/express').
//
//   app.use(rateLimit({ limit: 100, window: 60_000 }));                       // per client address
//   app.post('/login', rateLimit({ policy: '5/minute', key: (req) => req.body.user, store: 'redis://...' }), login);
//
// Defaults: the memory store, draft-8 headers, fail open when the store is down (onStoreError: 'allow'), a 400
// when no key can be made. docs/node.md has every option.

const { Limiter } = require('./limiter');
const { DEFAULT_IPV6_SUBNET, clientKey } = require('./client_ip');
const { STYLES, Fields, rateLimitFields } = require('./headers');
const { invalidArgument } = require('./errors');

// What the ratewarden limiters met so far on a request did: { counted, reports }, the limiters that counted it and
// what they reported (its fields are computed from all of them). One property on the request: Express gives each
// request its prototype, after which every property added to it is slow to add.
const STATE = Symbol('ratewarden');

const KNOWN = ['limit', 'window', 'policy', 'algorithm', 'burst', 'buckets', 'prefix', 'store', 'key', 'skip',
  'handler', 'onKeyError', 'message', 'statusCode', 'headers', 'legacyHeaders', 'onStoreError', 'ipv6Subnet'];

let warnedForwardedFor = false;

// X-Forwarded-For on a request while `trust proxy` is off: either a proxy the app does not trust (every client then
// shares the proxy's address, one limit for all), or a client forging the header (harmless here, but a sign the
// configuration was not thought through). Said once per process.
function warnForwardedFor(req) {
  if (warnedForwardedFor || req.headers['x-forwarded-for'] === undefined || req.app.get('trust proxy')) return;
  warnedForwardedFor = true;
  process.emitWarning(
    'ratewarden/express: a request carries X-Forwarded-For but Express\'s "trust proxy" setting is off, so every ' +
      'request behind that proxy is keyed by the proxy\'s address. Behind a reverse proxy, set ' +
      'app.set("trust proxy", <hops or addresses>) — never `true` unless the proxy overwrites the header.',
    { code: 'RATEWARDEN_X_FORWARDED_FOR' },
  );
}

function positiveInteger(name, value) {
  if (!(Number.isSafeInteger(value) && value >= 1)) {
    throw invalidArgument(`${name} must be an integer >= 1, got ${JSON.stringify(value)}`);
  }
}

function optionalFunction(name, value) {
  if (value !== undefined && typeof value !== 'function') throw invalidArgument(`${name} must be a function`);
}

function policyOf(options) {
  const { policy, limit, window: windowMs } = options;
  if (policy !== undefined) {
    if (limit !== undefined || windowMs !== undefined) throw invalidArgument('give either policy or limit/window, not both');
    return policy;
  }
  const l = limit === undefined ? 5 : limit;
  const w = windowMs === undefined ? 60000 : windowMs;
  positiveInteger('limit', l);
  positiveInteger('window (milliseconds)', w);
  return `${l}/${w}ms`;
}

// "100-in-1min": the name of a rate in the RateLimit fields (express-rate-limit's naming).
function policyName(rate) {
  const s = rate.periodMs / 1000;
  let duration;
  if (s < 60) duration = `${s}sec`;
  else if (s < 3600) duration = `${s / 60}min`;
  else if (s < 86400) duration = `${s / 3600}hr${s > 3600 ? 's' : ''}`;
  else duration = `${s / 86400}day${s > 86400 ? 's' : ''}`;
  return `${rate.limit}-in-${duration}`;
}

function defaultKeyError(req, res) {
  res.status(400).type('text/plain').send('Bad Request: the client could not be identified.');
}

function isPromise(value) {
  return value !== null && typeof value === 'object' && typeof value.then === 'function';
}

function rateLimit(options = {}) {
  if (options === null || typeof options !== 'object') throw invalidArgument('rateLimit options must be an object');
  const unknown = Object.keys(options).find((k) => !KNOWN.includes(k));
  if (unknown !== undefined) throw invalidArgument(`unknown rateLimit option "${unknown}" (known: ${KNOWN.join(', ')})`);
  const {
    key, skip, handler, onKeyError = defaultKeyError, message = 'Too many requests, please try again later.',
    statusCode = 429, headers = 'draft-8', legacyHeaders = false, onStoreError = 'allow',
    ipv6Subnet = DEFAULT_IPV6_SUBNET,
  } = options;
  optionalFunction('key', key);
  optionalFunction('skip', skip);
  optionalFunction('handler', handler);
  optionalFunction('onKeyError', onKeyError);
  if (headers !== false && !STYLES.includes(headers)) {
    throw invalidArgument(`headers must be false or one of ${STYLES.map((s) => `"${s}"`).join(', ')}, got ${JSON.stringify(headers)}`);
  }
  if (!Number.isInteger(ipv6Subnet) || ipv6Subnet < 8 || ipv6Subnet > 128) {
    throw invalidArgument(`ipv6Subnet must be an integer between 8 and 128, got ${JSON.stringify(ipv6Subnet)}`);
  }
  positiveInteger('statusCode', statusCode);

  const limiter = new Limiter({
    policy: policyOf(options),
    store: options.store,
    algorithm: options.algorithm,
    burst: options.burst,
    buckets: options.buckets,
    prefix: options.prefix,
    onStoreError,
  });
  const sync = limiter.store.inMemory;
  const quotas = limiter.policies.map((r) => ({ name: policyName(r), limit: r.limit, periodMs: r.periodMs }));
  const ownFields = new Fields([quotas], headers, legacyHeaders);  // when this is the request's only limiter
  // The default answer to a denial, when the message is text: its bytes, made once.
  const body = typeof message === 'string' ? Buffer.from(message) : undefined;
  const keyOf = key || ((req) => {
    warnForwardedFor(req);
    return req.ip === undefined ? undefined : clientKey(req.ip, ipv6Subnet);
  });

  // The fields are those of every limiter on the request so far (Python's Flask extension computes them alike):
  // each limiter sets them again with its own report added.
  function respond(req, res, next, decision) {
    const { reports } = req[STATE];
    reports.push({ quotas, decision });
    const fields = reports.length === 1 ? ownFields.of([decision], legacyHeaders ? Date.now() : 0)
      : rateLimitFields(reports, headers, legacyHeaders, Date.now());
    for (let i = 0; i < fields.length; i++) res.setHeader(fields[i][0], fields[i][1]);
    req.rateLimit = decision;
    if (decision.allowed) return next();
    if (handler) return handler(req, res, next, decision);
    if (body === undefined) return res.status(statusCode).send(message);
    // A text message is ended here, as res.send would send it (but without an ETag, which a refusal has no use for).
    res.statusCode = statusCode;
    res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    res.setHeader('Content-Length', body.length);
    return res.end(req.method === 'HEAD' ? undefined : body);
  }

  function decide(req, res, next, k) {
    if (typeof k !== 'string' && !(k instanceof Uint8Array) || k.length === 0) {
      return onKeyError(req, res, next, invalidArgument(`the key function returned ${k === '' ? 'an empty string' : typeof k}`));
    }
    let pending;
    try {
      if (sync) return respond(req, res, next, limiter.hitSync(k));
      pending = limiter.hit(k);
    } catch (error) {
      return onFailure(req, res, next, error);
    }
    return pending.then((d) => respond(req, res, next, d), (error) => onFailure(req, res, next, error));
  }

  // A key the core rejects (too long) is a key error; anything else (a store failure with onStoreError 'raise')
  // goes to Express's error handling.
  function onFailure(req, res, next, error) {
    if (error.code === 'ERR_RATEWARDEN_INVALID_ARGUMENT') return onKeyError(req, res, next, error);
    return next(error);
  }

  function afterSkip(req, res, next, skipped) {
    if (skipped) return next();
    let k;
    try {
      k = keyOf(req, res);
    } catch (error) {
      return onKeyError(req, res, next, error);
    }
    if (isPromise(k)) return k.then((v) => decide(req, res, next, v), (error) => onKeyError(req, res, next, error));
    return decide(req, res, next, k);
  }

  function start(req, res, next) {
    if (!skip) return afterSkip(req, res, next, false);
    let skipped;
    try {
      skipped = skip(req, res);
    } catch (error) {
      return next(error);
    }
    if (isPromise(skipped)) return skipped.then((s) => afterSkip(req, res, next, s), next);
    return afterSkip(req, res, next, skipped);
  }

  return function ratewardenMiddleware(req, res, next) {
    // One hit per request, even when the same middleware is met twice (mounted on the app and on a router); a
    // middleware is known by its quotas array, which is its own.
    const state = req[STATE];
    if (state === undefined) req[STATE] = { counted: [quotas], reports: [] };
    else if (state.counted.includes(quotas)) return next();
    else state.counted.push(quotas);
    const result = start(req, res, next);
    // A handler or onKeyError that throws after an await goes to Express, not to an unhandled rejection.
    if (isPromise(result)) result.catch(next);
  };
}

module.exports = { rateLimit, clientKey };
