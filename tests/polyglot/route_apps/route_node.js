'use strict';
// POST /api/users/:user_id/login, 5/minute per x-user, in Express, Fastify or Koa (a router or plugin prefixed
// /api), on a store: node route_node.js <express|fastify|koa> <port> <store URL>. Prints "listening" when it is.
// tests/polyglot/test_one_route.py serves it beside the same route in Flask, FastAPI and Django.
const http = require('node:http');

const [framework, port, store] = process.argv.slice(2);
const limit = { policy: '5/minute', key: 'header:x-user', store };
const welcome = 'welcome';

async function express() {
  const app = require('express')();
  const { rateLimit } = require('ratewarden/express');
  const api = require('express').Router();
  api.post('/users/:user_id/login', rateLimit(limit), (req, res) => res.send(welcome));
  app.use('/api', api);
  return http.createServer(app);
}

async function fastify() {
  const app = require('fastify')();
  await app.register(require('ratewarden/fastify'), { global: false });
  await app.register(async (api) => {
    api.post('/users/:user_id/login', { config: { rateLimit: limit } }, async () => welcome);
  }, { prefix: '/api' });
  await app.listen({ port: Number(port), host: '127.0.0.1' });
}

async function koa() {
  const Koa = require('koa');
  const Router = require('@koa/router');
  const { rateLimit } = require('ratewarden/koa');
  const app = new Koa();
  const api = new Router({ prefix: '/api' });
  api.post('/users/:user_id/login', rateLimit(limit), (ctx) => {
    ctx.body = welcome;
  });
  app.use(api.routes());
  return http.createServer(app.callback());
}

({ express, fastify, koa })[framework]().then((server) => {
  if (server === undefined) console.log('listening');  // Fastify listens itself
  else server.listen(Number(port), '127.0.0.1', () => console.log('listening'));
});
