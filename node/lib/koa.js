'use strict';
// Koa 2 middleware: const { rateLimit } = require('ratewarden/koa').
//
//   app.use(rateLimit({ limit: 100, window: 60_000 }));                         // per client address
//   router.post('/login', bodyParser(), rateLimit({ policy: '5/minute', key: 'body:user' }), login);
//
// The options are the HTTP layer's (node/lib/http.js, docs/node.md). The client address is ctx.ip, which follows
// Koa's app.proxy; the user is ctx.state.user (koa-passport, koa-jwt); the body ctx.request.body (a body parser
// runs first). The decision is ctx.state.rateLimit. handler is (ctx, decision), onKeyError (ctx, error).

const { HttpLimiter, newState, NEXT, DENY, KEY_ERROR, KEY_ERROR_BODY } = require('./http');
const { clientKey } = require('./client_ip');

const STATE = Symbol('ratewarden');

let warnedForwardedFor = false;

// As Express's warning (express.js): X-Forwarded-For while app.proxy is off.
function warnForwardedFor(ctx) {
  if (warnedForwardedFor || ctx.headers['x-forwarded-for'] === undefined || ctx.app.proxy) return;
  warnedForwardedFor = true;
  process.emitWarning(
    'ratewarden/koa: a request carries X-Forwarded-For but Koa\'s app.proxy is off, so every request behind that ' +
      'proxy is keyed by the proxy\'s address. Behind a reverse proxy, set app.proxy = true and app.maxIpsCount to ' +
      'the number of proxies (which must overwrite the header).',
    { code: 'RATEWARDEN_X_FORWARDED_FOR' },
  );
}

const access = {
  framework: 'koa',
  ip(ctx) {
    warnForwardedFor(ctx);
    return ctx.ip;
  },
  header: (ctx, name) => ctx.headers[name],
  user: (ctx) => ctx.state.user,
  body: (ctx) => ctx.request.body,
  // In @koa/router's routes: the path of the route it matched, its prefixes with it.
  route: (ctx) => ctx._matchedRoute,
};

function defaultKeyError(ctx) {
  ctx.status = 400;
  ctx.type = 'text/plain; charset=utf-8';
  ctx.body = KEY_ERROR_BODY;
}

function rateLimit(options = {}) {
  const limiter = new HttpLimiter(options, access);
  const { handler, onKeyError = defaultKeyError } = limiter;

  function apply(ctx, next, plan) {
    const { fields } = plan;
    for (let i = 0; i < fields.length; i++) ctx.set(fields[i][0], fields[i][1]);
    if (plan.decision !== undefined) ctx.state.rateLimit = plan.decision;
    if (plan.kind === NEXT) {
      if (plan.key !== undefined) ctx.res.once('finish', () => limiter.settle(plan, ctx, undefined, ctx.status));
      return next();
    }
    if (plan.kind === KEY_ERROR) return onKeyError(ctx, plan.error);
    if (plan.kind !== DENY) throw plan.error;
    if (handler && plan.decision !== undefined) return handler(ctx, plan.decision);
    ctx.status = plan.status;
    ctx.type = plan.type;
    ctx.body = plan.body;
    return undefined;
  }

  function ratewardenMiddleware(ctx, next) {
    let state = ctx.state[STATE];
    if (state === undefined) ctx.state[STATE] = state = newState();
    const plan = limiter.run(ctx, undefined, state);
    if (plan.then === undefined) return apply(ctx, next, plan);
    return plan.then((p) => apply(ctx, next, p));
  }
  ratewardenMiddleware.limiter = limiter;
  return ratewardenMiddleware;
}

module.exports = { rateLimit, clientKey };
