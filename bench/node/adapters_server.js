'use strict';
// One app for the adapters benchmark, forked by adapters.js: node adapters_server.js <framework> <variant> <redis port>
// with framework express (Express 5, bench/node/express), fastify (Fastify 5) or koa (Koa 2) (bench/node/frameworks),
// and variant bare, rw-memory, rw-redis (ratewarden's adapter), peer-memory, peer-redis (the framework's usual
// limiter: express-rate-limit + rate-limit-redis, @fastify/rate-limit, koa-ratelimit; Redis through ioredis). It
// listens on a free loopback port and sends that port to its parent. Two routes, each answering a short text:
// - "/": 10^9 per hour per client address: every request is allowed and pays for a full decision;
// - "/denied": 1 per day per client address, used up here before the port is sent: every request is refused.

const http = require('node:http');
const path = require('node:path');

const [framework, variant, redisPort] = process.argv.slice(2);
const modules = path.join(__dirname, 'frameworks', 'node_modules');
const LIMIT = 1e9;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const redisUrl = `redis://127.0.0.1:${redisPort}`;
const prefix = `bench-adapters-${framework}-${process.pid}`;
const ours = (limit, windowMs) => ({ limit, window: windowMs, ...(variant === 'rw-redis' ? { store: redisUrl, prefix } : {}) });
const onRedis = variant.endsWith('redis');

function ioredis() {
  const Redis = require(path.join(modules, 'ioredis'));
  return new Redis({ port: Number(redisPort), host: '127.0.0.1' });
}

function expressApp() {
  const express = require(path.join(__dirname, 'express', 'node_modules', 'express5'));
  const app = express();
  const limit = (max, windowMs) => {
    if (variant === 'bare') return [];
    if (variant.startsWith('rw-')) return [require('ratewarden/express').rateLimit(ours(max, windowMs))];
    const options = { limit: max, windowMs, standardHeaders: 'draft-7', legacyHeaders: false };
    if (onRedis) {
      const client = ioredis();
      const { RedisStore } = require('rate-limit-redis');
      options.store = new RedisStore({ sendCommand: (...args) => client.call(...args), prefix: `${prefix}:${max}:` });
    }
    return [require('express-rate-limit').rateLimit(options)];
  };
  app.get('/', ...limit(LIMIT, HOUR_MS), (req, res) => res.send('hello\n'));
  app.get('/denied', ...limit(1, DAY_MS), (req, res) => res.send('hello\n'));
  return new Promise((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
}

async function fastifyApp() {
  const app = require(path.join(modules, 'fastify'))();
  const route = (max, windowMs) => {
    if (variant === 'bare') return {};
    if (variant.startsWith('rw-')) return { config: { rateLimit: ours(max, windowMs) } };
    return { config: { rateLimit: { max, timeWindow: windowMs } } };
  };
  if (variant.startsWith('rw-')) await app.register(require('ratewarden/fastify'), { global: false });
  if (variant.startsWith('peer-')) {
    await app.register(require(path.join(modules, '@fastify/rate-limit')),
      { global: false, ...(onRedis ? { redis: ioredis(), nameSpace: `${prefix}:` } : {}) });
  }
  app.get('/', route(LIMIT, HOUR_MS), async () => 'hello\n');
  app.get('/denied', route(1, DAY_MS), async () => 'hello\n');
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app.server;
}

function koaApp() {
  const Koa = require(path.join(modules, 'koa'));
  const app = new Koa();
  const limit = (max, windowMs) => {
    if (variant.startsWith('rw-')) return require('ratewarden/koa').rateLimit(ours(max, windowMs));
    return require(path.join(modules, 'koa-ratelimit'))({
      driver: onRedis ? 'redis' : 'memory', db: onRedis ? ioredis() : new Map(), duration: windowMs, max,
      id: (ctx) => ctx.ip, namespace: `${prefix}:${max}`,
    });
  };
  const hello = (ctx) => { ctx.body = 'hello\n'; };
  const routes = { '/': [hello], '/denied': [hello] };
  if (variant !== 'bare') {
    routes['/'].unshift(limit(LIMIT, HOUR_MS));
    routes['/denied'].unshift(limit(1, DAY_MS));
  }
  // As a router would: the route's middlewares, by path.
  const compose = require(path.join(modules, 'koa-compose'));
  const chains = Object.fromEntries(Object.entries(routes).map(([p, fns]) => [p, compose(fns)]));
  app.use((ctx, next) => (chains[ctx.path] ? chains[ctx.path](ctx) : next()));
  const server = http.createServer(app.callback());
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function get(port, route) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: route }, (res) => res.resume().on('end', resolve)).on('error', reject);
  });
}

(async () => {
  const server = await { express: expressApp, fastify: fastifyApp, koa: koaApp }[framework]();
  const { port } = server.address();
  await get(port, '/denied');  // the one request of the day (the bench's requests all come from 127.0.0.1)
  process.send(port);
})();
