'use strict';
// A Fastify 5 plugin: `await app.register(require('ratewarden/fastify'), options)`.
//
//   await app.register(ratewarden, { limit: 100, window: 60_000 });              // every route, per client address
//   app.post('/login', { config: { rateLimit: { policy: '5/minute', key: 'body:user' } } }, login);
//   app.get('/health', { config: { rateLimit: false } }, health);                  // not limited
//
// The options are the HTTP layer's (node/lib/http.js, docs/node.md), plus `global` (default true: every route gets
// the plugin's limit; false: only routes whose config names one) and `hook` ('onRequest', the default, or
// 'preHandler'; a key read from the body is always taken in preHandler, after the body is parsed). A route's
// `config.rateLimit` is that route's own limit, its options laid over the plugin's. The plugin is not
// encapsulated: its limits reach the routes of the context it is registered in and of its child contexts. A route
// gets its limit's hook when it is added (onRoute); a route added before the plugin, which onRoute never sees, is
// limited from hooks of the plugin's context instead (they run before the route's own hooks).

const { HttpLimiter, newState, NEXT, DENY, KEY_ERROR, KEY_ERROR_BODY } = require('./http');
const { clientKey } = require('./client_ip');
const { invalidArgument } = require('./errors');
const { isPromise } = require('./http_keys');

const STATE = Symbol('ratewarden');
const SEEN = Symbol('ratewarden route');  // in the config of each route the plugin's onRoute saw
const HOOKS = ['onRequest', 'preHandler'];

let warnedForwardedFor = false;

// As Express's warning (express.js): X-Forwarded-For while Fastify's trustProxy is off.
function warnForwardedFor(request) {
  if (warnedForwardedFor || request.headers['x-forwarded-for'] === undefined || request.server.initialConfig.trustProxy) return;
  warnedForwardedFor = true;
  process.emitWarning(
    'ratewarden/fastify: a request carries X-Forwarded-For but Fastify\'s trustProxy option is off, so every ' +
      'request behind that proxy is keyed by the proxy\'s address. Behind a reverse proxy, create the app with ' +
      'Fastify({ trustProxy: <hops or addresses> }) — never `true` unless the proxy overwrites the header.',
    { code: 'RATEWARDEN_X_FORWARDED_FOR' },
  );
}

const access = {
  framework: 'fastify',
  ip(request) {
    warnForwardedFor(request);
    return request.ip;
  },
  header: (request, name) => request.headers[name],
  user: (request) => request.user,
  body: (request) => request.body,
  route: () => undefined,  // a route's own limit is made for its route (limitOf); the plugin's counts across routes
};

function defaultKeyError(request, reply) {
  reply.code(400).type('text/plain; charset=utf-8').send(KEY_ERROR_BODY);
}

// What a handler or onKeyError returned: a rejection goes to Fastify's error handling, as a throw does (the reply
// itself, which a handler may return, is thenable too).
function sent(result, reply) {
  if (result !== reply && isPromise(result)) result.then(undefined, (error) => reply.send(error));
}

// The hook of one limit: callback style, so an allowed request costs no Promise on the memory store.
function hookOf(limiter) {
  const { handler, onKeyError = defaultKeyError } = limiter;

  function apply(request, reply, done, plan) {
    const { fields } = plan;
    for (let i = 0; i < fields.length; i++) reply.header(fields[i][0], fields[i][1]);
    if (plan.decision !== undefined) request.rateLimit = plan.decision;
    if (plan.kind === NEXT) {
      if (plan.key !== undefined) {
        reply.raw.once('finish', () => limiter.settle(plan, request, reply, reply.statusCode));
      }
      done();
    }
    else if (plan.kind === KEY_ERROR) sent(onKeyError(request, reply, plan.error), reply);
    else if (plan.kind !== DENY) done(plan.error);
    else if (handler && plan.decision !== undefined) sent(handler(request, reply, plan.decision), reply);
    // Fastify adds "; charset=utf-8" to a string's type that has none (problem+json): that body goes as bytes.
    else reply.code(plan.status).type(plan.type).send(plan.type.includes('charset') ? plan.body : plan.bytes);
  }

  // Returns nothing: Fastify would take a returned Promise (or the reply, which is thenable) for an async hook's.
  return function ratewardenHook(request, reply, done) {
    let state = request[STATE];
    if (!state) request[STATE] = state = newState();  // null as decorated; undefined in a context made before
    const plan = limiter.run(request, reply, state);
    if (plan.then === undefined) apply(request, reply, done, plan);
    else {
      plan.then((p) => {  // one Promise of ours, not two: a throw of apply (a custom handler's) is caught here
        try {
          apply(request, reply, done, p);
        } catch (error) {
          reply.send(error);
        }
      });
    }
  };
}

function split(options) {
  const { global = true, hook = 'onRequest', ...rest } = options;
  if (typeof global !== 'boolean') throw invalidArgument(`global must be true or false, got ${JSON.stringify(global)}`);
  if (!HOOKS.includes(hook)) throw invalidArgument(`hook must be "onRequest" or "preHandler", got ${JSON.stringify(hook)}`);
  return { global, hook, rest };
}

function ratewarden(fastify, options, done) {
  let plugin;
  try {
    plugin = split(options);
  } catch (error) {
    return done(error);
  }
  // Made at start-up, once: every route without a limit of its own shares this one (one count per client across
  // the routes, as a per-app limit is expected to do).
  let shared;
  // url -> { own, limiter } of its GET or HEAD route, whichever came first: the HEAD route Fastify adds to a GET
  // route (the same options) shares its count.
  const pairs = new Map();

  // The limit of a route ({ method, url, config }) and the hook it counts in, or undefined for none.
  function limitOf(route) {
    const own = route.config?.rateLimit;
    if (own === false || (own === undefined && !plugin.global)) return undefined;
    if (own !== undefined && (own === null || typeof own !== 'object')) {
      throw invalidArgument(`config.rateLimit of ${route.method} ${route.url} must be an options object or false`);
    }
    let limiter;
    let hook = plugin.hook;
    if (own === undefined) {
      if (shared === undefined) shared = new HttpLimiter(plugin.rest, access);
      limiter = shared;
    } else {
      const merged = split({ global: plugin.global, hook: plugin.hook, ...own });
      hook = merged.hook;
      const paired = route.method === 'GET' || route.method === 'HEAD';
      const pair = paired ? pairs.get(route.url) : undefined;
      if (pair !== undefined && pair.own === own) {
        limiter = pair.limiter;
      } else {
        // A route's policy replaces the plugin's (limit/window or policy, not a mix of both).
        const { scope, ...base } = plugin.rest;  // the plugin's scope names the plugin's count, not the route's
        if (own.policy !== undefined) {
          delete base.limit;
          delete base.window;
        }
        if (own.limit !== undefined || own.window !== undefined) delete base.policy;
        limiter = new HttpLimiter({ ...base, ...merged.rest }, access, route.url);
        if (paired) pairs.set(route.url, { own, limiter });
      }
    }
    return { hook: limiter.needsBody ? 'preHandler' : hook, run: hookOf(limiter) };
  }

  if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', undefined);
  // Declared, so that every request is made with it: set on a request later, it would change the request's shape.
  if (!fastify.hasRequestDecorator(STATE)) fastify.decorateRequest(STATE, null);
  fastify.addHook('onRoute', (route) => {
    route.config = { ...route.config, [SEEN]: true };
    const limit = limitOf(route);
    if (limit === undefined) return;
    const existing = route[limit.hook];
    route[limit.hook] = [...(existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]), limit.run];
  });

  // The routes added before the plugin: their limits, made on their first request (by method and URL), from hooks
  // of the plugin's context — added only when the server had routes already (request.routeOptions is made afresh
  // on each read: no cost for an app that registers the plugin first).
  if (fastify.printRoutes().trim() === '(empty tree)') return done();
  const earlier = new Map();  // `${method} ${url}` -> its limit (undefined: none)
  for (const phase of HOOKS) {
    fastify.addHook(phase, (request, reply, next) => {
      const { config, method, url } = request.routeOptions;
      if (config[SEEN] === true || request.is404) return next();
      const key = `${method} ${url}`;
      if (!earlier.has(key)) {
        try {
          earlier.set(key, limitOf({ method, url, config }));
        } catch (error) {
          return next(error);
        }
      }
      const limit = earlier.get(key);
      if (limit === undefined || limit.hook !== phase) return next();
      return limit.run(request, reply, next);
    });
  }
  return done();
}

// Not encapsulated (fastify-plugin's markers): its hooks reach the routes of the app and of its child contexts.
ratewarden[Symbol.for('skip-override')] = true;
ratewarden[Symbol.for('fastify.display-name')] = 'ratewarden';
ratewarden[Symbol.for('plugin-meta')] = { name: 'ratewarden', fastify: '5.x' };

module.exports = ratewarden;
module.exports.default = ratewarden;
module.exports.ratewarden = ratewarden;
module.exports.clientKey = clientKey;
