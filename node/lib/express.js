'use strict';
// Express middleware (Express 4 and 5) in the style of express-rate-limit: const { rateLimit } = require('ratewarden/express').
//
//   app.use(rateLimit({ limit: 100, window: 60_000 }));                       // per client address
//   app.post('/login', rateLimit({ policy: '5/minute', key: 'body:user', store: 'redis://...' }), login);
//
// The options and their behaviour are the HTTP layer's (node/lib/http.js), the same for every adapter; docs/node.md
// has them all. Here: how Express's request is read and how a plan becomes its response.

const { HttpLimiter, newState, NEXT, DENY, KEY_ERROR, KEY_ERROR_BODY } = require('./http');
const { clientKey } = require('./client_ip');

// What the ratewarden limiters met so far on a request did (http.js). One property on the request: Express gives
// each request its prototype, after which every property added to it is slow to add.
const STATE = Symbol('ratewarden');

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

const access = {
  framework: 'express',
  ip(req) {
    warnForwardedFor(req);
    return req.ip;
  },
  header: (req, name) => req.headers[name],
  user: (req) => req.user,
  body: (req) => req.body,
  // In a route (app.post('/login', limiter, ...)): its path under the routers' mount paths, as the request met them.
  route: (req) => (req.route !== undefined && typeof req.route.path === 'string' ? req.baseUrl + req.route.path
    : undefined),
};

function defaultKeyError(req, res) {
  res.status(400).type('text/plain; charset=utf-8').send(KEY_ERROR_BODY);
}

function rateLimit(options = {}) {
  const limiter = new HttpLimiter(options, access);
  const { handler, onKeyError = defaultKeyError } = limiter;

  function apply(req, res, next, plan) {
    const { fields } = plan;
    for (let i = 0; i < fields.length; i++) res.setHeader(fields[i][0], fields[i][1]);
    if (plan.decision !== undefined) req.rateLimit = plan.decision;
    if (plan.kind === NEXT) {
      if (plan.key !== undefined) res.once('finish', () => limiter.settle(plan, req, res, res.statusCode));
      return next();
    }
    if (plan.kind === KEY_ERROR) return onKeyError(req, res, next, plan.error);
    if (plan.kind !== DENY) return next(plan.error);
    if (handler && plan.decision !== undefined) return handler(req, res, next, plan.decision);
    // Ended here, as res.send would send it (but without an ETag, which a refusal has no use for).
    res.statusCode = plan.status;
    res.setHeader('Content-Type', plan.type);
    res.setHeader('Content-Length', plan.length);
    return res.end(req.method === 'HEAD' ? undefined : plan.body);
  }

  function ratewardenMiddleware(req, res, next) {
    let state = req[STATE];
    if (state === undefined) req[STATE] = state = newState();
    const plan = limiter.run(req, res, state);
    if (plan.then === undefined) return apply(req, res, next, plan);
    // A handler or onKeyError that throws (or rejects) after an await goes to Express, not to an unhandled
    // rejection. One Promise of ours, not two, on the way.
    return plan.then((p) => {
      try {
        const result = apply(req, res, next, p);
        if (result !== undefined && result !== null && typeof result.then === 'function') result.then(undefined, next);
      } catch (error) {
        next(error);
      }
    });
  }
  ratewardenMiddleware.limiter = limiter;
  return ratewardenMiddleware;
}

module.exports = { rateLimit, clientKey };
