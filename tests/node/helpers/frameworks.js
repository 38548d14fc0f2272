'use strict';
// One app per framework over real HTTP on 127.0.0.1 (Node's http), built from the same description, so that one
// test runs against Express 4, Express 5, Fastify 5, Koa 2 and Koa 3 (with @koa/router) alike:
//   serve(name, { app: options | undefined, routes: [{ method, path, limits: [options...] }], trustProxy })
// `app` is an app-wide limit (Express and Koa: app.use; Fastify: the plugin's options). A route's limits run in
// order (Fastify: one limit per route, its config.rateLimit). Every app parses JSON bodies before its limits and
// sets the user to { id: Number(x-user) } when the request carries x-user. A handler answers "ok", or 401 "no" to
// a request with x-fail: 1 (a failed login).

const http = require('node:http');

function user(headers) {
  return headers['x-user'] === undefined ? undefined : { id: Number(headers['x-user']) };
}

function expressApp(express, { app: global, routes, trustProxy }) {
  const { rateLimit } = require('ratewarden/express');
  const app = express();
  if (trustProxy !== undefined) app.set('trust proxy', trustProxy);
  app.use(express.json());
  app.use((req, res, next) => {
    req.user = user(req.headers);
    next();
  });
  if (global) app.use(rateLimit(global));
  for (const r of routes) {
    app[r.method.toLowerCase()](r.path, ...r.limits.map((o) => rateLimit(o)),
      (req, res) => (req.headers['x-fail'] === '1' ? res.status(401).send('no') : res.send('ok')));
  }
  const server = http.createServer(app);
  return listening(server);
}

function listening(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(wrap(server, () =>
    new Promise((done) => {
      server.close(done);
      server.closeAllConnections();  // a client's socket left open must not hold the test for keepAliveTimeout
    })))));
}

async function fastifyApp({ app: global, routes, trustProxy }) {
  // forceCloseConnections: close() ends a client's socket left open, rather than wait out Fastify's 72 s keep-alive.
  const app = require('fastify')({ trustProxy: trustProxy ?? false, forceCloseConnections: true });
  app.addHook('onRequest', (request, reply, done) => {
    request.user = user(request.headers);
    done();
  });
  await app.register(require('ratewarden/fastify'), global ? global : { global: false });
  for (const r of routes) {
    if (r.limits.length > 1) throw new Error('Fastify: one limit per route');
    const config = r.limits.length ? { rateLimit: r.limits[0] } : {};
    app.route({ method: r.method, url: r.path, config,
      handler: async (request, reply) => (request.headers['x-fail'] === '1' ? reply.code(401).send('no') : 'ok') });
  }
  await app.listen({ port: 0, host: '127.0.0.1' });
  return wrap(app.server, () => app.close());
}

function koaApp(Koa, { app: global, routes, trustProxy }) {
  const Router = require('@koa/router');
  const { rateLimit } = require('ratewarden/koa');
  const app = new Koa();
  if (trustProxy !== undefined) app.proxy = Boolean(trustProxy);
  app.use(async (ctx, next) => {  // a small JSON body parser, and the user
    if (ctx.is('application/json')) {
      const chunks = [];
      for await (const c of ctx.req) chunks.push(c);
      ctx.request.body = JSON.parse(Buffer.concat(chunks).toString() || 'null');
    }
    ctx.state.user = user(ctx.headers);
    return next();
  });
  if (global) app.use(rateLimit(global));
  const router = new Router();
  for (const r of routes) {
    router[r.method.toLowerCase()](r.path, ...r.limits.map((o) => rateLimit(o)), (ctx) => {
      if (ctx.headers['x-fail'] === '1') ctx.status = 401;
      ctx.body = ctx.status === 401 ? 'no' : 'ok';
    });
  }
  app.use(router.routes());
  return listening(http.createServer(app.callback()));
}

// Many requests at once over a few kept-alive connections (a fetch each would open a socket each): resolves with
// their statuses, in order.
function many(port, path, headersList) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  return Promise.all(headersList.map((headers) => new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path, headers, agent }, (res) => {
      res.resume().on('end', () => resolve(res.statusCode));
    }).on('error', reject);
  }))).finally(() => agent.destroy());
}

function wrap(server, close) {
  const { port } = server.address();
  const base = `http://127.0.0.1:${port}`;
  return {
    base,
    many: (path, headersList) => many(port, path, headersList),
    dropConnections: () => server.closeAllConnections(),  // every socket, mid-request or not
    async request(path, options = {}) {
      const res = await fetch(base + path, options);
      return { status: res.status, body: await res.text(), headers: Object.fromEntries(res.headers) };
    },
    close,
  };
}

const FRAMEWORKS = ['express4', 'express5', 'fastify', 'koa', 'koa3'];

function serve(name, spec) {
  if (name === 'express4') return expressApp(require('express4'), spec);
  if (name === 'express5') return expressApp(require('express'), spec);
  if (name === 'fastify') return fastifyApp(spec);
  if (name === 'koa') return koaApp(require('koa'), spec);
  if (name === 'koa3') return koaApp(require('koa3'), spec);
  throw new Error(`unknown framework ${name}`);
}

module.exports = { FRAMEWORKS, serve };
