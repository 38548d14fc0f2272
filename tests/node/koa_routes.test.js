'use strict';
// ratewarden/koa under @koa/router: a route's limit counts under the route's template, its routers' prefixes
// included, whatever the request's spelling (the router matches paths in either case) and whatever a parameter's
// value: no spelling or value gets a count, or figures, of its own (docs/node.md, "Scopes: each limit counts on its
// own").

const { test } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const Koa = require('koa');
const Router = require('@koa/router');
const { rateLimit } = require('ratewarden/koa');

test('a route under routers counts under its template, not the request\'s spelling', async () => {
  const app = new Koa();
  const limit = rateLimit({ limit: 3, window: 60_000 });
  const api = new Router();
  api.get('/login', limit, (ctx) => { ctx.body = 'ok'; });
  const tenant = new Router();
  tenant.get('/login', limit, (ctx) => { ctx.body = 'ok'; });
  const root = new Router();
  root.use('/api', api.routes());
  root.use('/t/:tenant', tenant.routes());
  app.use(root.routes());
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const get = (path) => new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: server.address().port, path }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    }).on('error', reject);
  });
  const got = async (paths) => {
    const out = [];
    for (const path of paths) out.push(await get(path));
    return out;
  };
  try {
    assert.deepEqual(await got(['/api/login', '/API/login', '/Api/login', '/aPi/LOGIN']), [200, 200, 200, 429]);
    assert.deepEqual(await got(['/t/a/login', '/T/b/login', '/t/c/login', '/t/d/login']), [200, 200, 200, 429]);
    assert.deepEqual([...limit.limiter.limiters.keys()].sort(), ['/api/login 3/60s', '/t/:tenant/login 3/60s']);
  } finally {
    server.close();
  }
});
