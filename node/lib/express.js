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
const { isPromise } = require('./http_keys');

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

// The router of an app: Express 4's app._router, Express 5's app.router (which Express 4 refuses to read).
const routerOf = (app) => app._router ?? app.router;

const withIndices = new WeakMap();  // RegExp -> the same with match indices

// A mount path written back from its regexp and what it matched: each parameter `:name`, the rest as matched, in
// lower case when the regexp matches either case. Undefined when it does not match.
function written(regexp, names, path) {
  let indexed = withIndices.get(regexp);
  if (indexed === undefined) withIndices.set(regexp, indexed = new RegExp(regexp.source, `${regexp.flags}d`));
  const m = indexed.exec(path);
  if (m === null || m.index !== 0) return undefined;
  const text = (from, to) => (indexed.ignoreCase ? m[0].slice(from, to).toLowerCase() : m[0].slice(from, to));
  let template = '';
  let at = 0;
  for (let i = 1; i < m.length; i++) {
    if (m.indices[i] === undefined) continue;  // an optional parameter not given
    template += `${text(at, m.indices[i][0])}:${names?.[i - 1]?.name ?? i - 1}`;
    at = m.indices[i][1];
  }
  return { length: m[0].length, template: template + text(at, m[0].length) };
}

// The path a mount layer (app.use, router.use) was given, as it matched the start of `path`: { length, template },
// or undefined. Express 5 keeps the path; Express 4 only its regexp (and its parameters' names).
function mountPath(layer, path) {
  if (layer.matchers === undefined) {
    return layer.regexp.fast_slash ? { length: 0, template: '' } : written(layer.regexp, layer.keys, path);
  }
  const match = layer.match(path);
  if (!match) return undefined;
  if (typeof match.pattern !== 'string') return written(match.pattern, undefined, path);
  return { length: match.path.length, template: match.pattern };
}

// The mount paths, as their routers were given them, from `router` down to the route `route` under the remaining
// part `path` of the request's baseUrl; undefined if it is not found. `apps`: req.app and the apps it is mounted in,
// outermost first (an app mounted by app.use is behind a wrapper of its own, the layer "mounted_app").
function mountsOf(router, route, path, apps, depth) {
  for (const layer of router.stack) {
    if (layer.route !== undefined) {
      if (layer.route === route && path === '') return '';
      continue;
    }
    const inner = Array.isArray(layer.handle.stack) ? layer.handle
      : layer.handle.name === 'mounted_app' && depth + 1 < apps.length ? routerOf(apps[depth + 1]) : undefined;
    const mount = inner && mountPath(layer, path);
    if (!mount) continue;
    const below = mountsOf(inner, route, path.slice(mount.length), apps, inner === layer.handle ? depth : depth + 1);
    if (below !== undefined) return mount.template.replace(/\/$/, '') + below;
  }
  return undefined;
}

// A route's name is made of its routers' mount paths, not the request's spelling of them: Express matches them in
// either case, and with parameters, so the request's baseUrl would make a name (and a count) per spelling.
function routeOf(req) {
  const { route } = req;
  if (route === undefined || typeof route.path !== 'string') return undefined;
  if (req.baseUrl === '') return route.path;
  const apps = [];
  for (let app = req.app; app !== undefined; app = app.parent) apps.unshift(app);
  const mounts = mountsOf(routerOf(apps[0]), route, req.baseUrl, apps, 0);
  // Mounted where this cannot see (an app used as a plain middleware): the limit counts under its own scope.
  return mounts === undefined ? undefined : mounts + route.path;
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
  // In a route (app.post('/login', limiter, ...)): its path under the routers' mount paths.
  route: routeOf,
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

  // A handler or onKeyError that rejects goes to Express's error handling, not to an unhandled rejection: Express 4
  // ignores a middleware's Promise, and Express 5 is given none (it would call next a second time).
  function applied(req, res, next, plan) {
    const result = apply(req, res, next, plan);
    if (isPromise(result)) result.then(undefined, next);
  }

  function ratewardenMiddleware(req, res, next) {
    let state = req[STATE];
    if (state === undefined) req[STATE] = state = newState();
    const plan = limiter.run(req, res, state);
    if (plan.then === undefined) return applied(req, res, next, plan);  // a throw goes to Express
    // One Promise of ours, not two, on the way.
    return plan.then((p) => {
      try {
        applied(req, res, next, p);
      } catch (error) {
        next(error);
      }
    });
  }
  ratewardenMiddleware.limiter = limiter;
  return ratewardenMiddleware;
}

module.exports = { rateLimit, clientKey };
