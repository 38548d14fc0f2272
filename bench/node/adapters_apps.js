'use strict';
// The apps of the adapters benchmark: build(framework, variant, redisPort) resolves with { handler } — the app's
// (req, res) request handler (Express, Koa) — or { fastify } (the Fastify instance, ready), for adapters_server.js
// (over HTTP, under wrk) and adapters_inject.js (in process). Frameworks: express (Express 5, bench/node/express),
// fastify (Fastify 5) or koa (Koa 2) (bench/node/frameworks). Variants: bare, rw-memory, rw-redis (ratewarden's
// adapter), peer-memory, peer-redis (the framework's usual limiter: express-rate-limit + rate-limit-redis,
// @fastify/rate-limit, koa-ratelimit; Redis through ioredis). Two routes, each answering a short text:
// - "/": 10^9 per hour per client address: every request is allowed and pays for a full decision;
// - "/denied": 1 per day per client address, to be used up before measuring: every request is then refused.
// The variant "fields" is the floor of the memory-store cases: the bare app answering with the very header fields
// (and, on "/denied", the 429 with its body) that ratewarden's adapter sends, with no limiting at all — what the
// fields the issue asks for cost by themselves. The variants hand-memory and hand-redis: see handLimit.

const path = require('node:path');

const modules = path.join(__dirname, 'frameworks', 'node_modules');
const LIMIT = 1e9;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
let built = 0;

// The fields of ratewarden's answers on the two routes (node/lib/headers.js, draft-8), made by hand: `n` counts down
// as the allowed route's remaining does.
let n = LIMIT;
const FIELDS = {
  '/': () => [['RateLimit-Policy', '"1000000000-in-1hr";q=1000000000;w=3600'],
    ['RateLimit', `"1000000000-in-1hr";r=${--n};t=3600`]],
  '/denied': () => [['RateLimit-Policy', '"1-in-1day";q=1;w=86400'], ['RateLimit', '"1-in-1day";r=0;t=86400'],
    ['Retry-After', '86400']],
};
const DENIAL = 'Too many requests, please try again later.';

// The variants "hand-memory" and "hand-redis": the limiter a user would write by hand instead of an adapter —
// ratewarden's Limiter called from the framework's hook with the client's address, the same fields as the adapter,
// a 429 with Retry-After — no options, no skip, no error policy: the few lines the adapters must beat.
// decide(address, answer): answer(decision, fields) is called at once on the memory store, after the hit on Redis.
function handLimit(max, windowMs, store, prefix) {
  const { Limiter } = require('ratewarden');
  const limiter = new Limiter({ policy: `${max}/${windowMs}ms`, ...(store ? { store, prefix: `${prefix}:hand` } : {}) });
  const name = max === 1 ? '"1-in-1day"' : '"1000000000-in-1hr"';
  const policy = `${name};q=${max};w=${windowMs / 1000}`;
  const fields = (d) => {
    if (d.allowed) return [['RateLimit-Policy', policy], ['RateLimit', `${name};r=${d.remaining};t=${Math.ceil(d.resetAfterUs / 1e6)}`]];
    const wait = String(Math.ceil(d.retryAfterUs / 1e6));
    return [['RateLimit-Policy', policy], ['RateLimit', `${name};r=0;t=${wait}`], ['Retry-After', wait]];
  };
  if (!store) return (address, answer) => { const d = limiter.hitSync(address); return answer(d, fields(d)); };
  return (address, answer) => limiter.hit(address).then((d) => answer(d, fields(d)));
}

function build(framework, variant, redisPort) {
  const prefix = `bench-adapters-${framework}-${process.pid}-${++built}`;
  const onRedis = variant.endsWith('redis');
  const ours = (limit, windowMs) => ({
    limit, window: windowMs, ...(variant === 'rw-redis' ? { store: `redis://127.0.0.1:${redisPort}`, prefix } : {}),
  });
  const ioredis = () => {
    const Redis = require(path.join(modules, 'ioredis'));
    return new Redis({ port: Number(redisPort), host: '127.0.0.1' });
  };

  function expressApp() {
    const express = require(path.join(__dirname, 'express', 'node_modules', 'express5'));
    const app = express();
    const limit = (max, windowMs) => {
      if (variant === 'bare') return [];
      if (variant === 'fields') {
        return [(req, res, next) => {
          for (const [name, value] of FIELDS[req.path]()) res.setHeader(name, value);
          if (max === 1) res.status(429).type('text/plain; charset=utf-8').send(DENIAL);
          else next();
        }];
      }
      if (variant.startsWith('rw-')) return [require('ratewarden/express').rateLimit(ours(max, windowMs))];
      if (variant.startsWith('hand-')) {
        const decide = handLimit(max, windowMs, onRedis && `redis://127.0.0.1:${redisPort}`, prefix);
        return [(req, res, next) => decide(req.ip, (d, fields) => {
          for (const [name, value] of fields) res.setHeader(name, value);
          if (d.allowed) return next();
          return res.status(429).type('text/plain; charset=utf-8').send(DENIAL);
        })];
      }
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
    return { handler: app };
  }

  async function fastifyApp() {
    const app = require(path.join(modules, 'fastify'))();
    const route = (max, windowMs) => {
      if (variant === 'bare') return {};
      if (variant === 'fields') {
        return { onRequest: [(request, reply, done) => {
          for (const [name, value] of FIELDS[request.url]()) reply.header(name, value);
          if (max === 1) reply.code(429).type('text/plain; charset=utf-8').send(DENIAL);
          else done();
        }] };
      }
      if (variant.startsWith('rw-')) return { config: { rateLimit: ours(max, windowMs) } };
      if (variant.startsWith('hand-')) {
        const decide = handLimit(max, windowMs, onRedis && `redis://127.0.0.1:${redisPort}`, prefix);
        // A callback hook returns nothing: Fastify would take a Promise (or the reply, a thenable) for an async one's.
        return { onRequest: [(request, reply, done) => {
          decide(request.ip, (d, fields) => {
            for (const [name, value] of fields) reply.header(name, value);
            if (d.allowed) done();
            else reply.code(429).type('text/plain; charset=utf-8').send(DENIAL);
          });
        }] };
      }
      return { config: { rateLimit: { max, timeWindow: windowMs } } };
    };
    if (variant.startsWith('rw-')) await app.register(require('ratewarden/fastify'), { global: false });
    if (variant.startsWith('peer-')) {
      await app.register(require(path.join(modules, '@fastify/rate-limit')),
        { global: false, ...(onRedis ? { redis: ioredis(), nameSpace: `${prefix}:` } : {}) });
    }
    app.get('/', route(LIMIT, HOUR_MS), async () => 'hello\n');
    app.get('/denied', route(1, DAY_MS), async () => 'hello\n');
    await app.ready();
    return { fastify: app };
  }

  function koaApp() {
    const Koa = require(path.join(modules, 'koa'));
    const compose = require(path.join(modules, 'koa-compose'));
    const app = new Koa();
    const limit = (max, windowMs) => {
      if (variant === 'fields') {
        return (ctx, next) => {
          for (const [name, value] of FIELDS[ctx.path]()) ctx.set(name, value);
          if (max !== 1) return next();
          ctx.status = 429;
          ctx.type = 'text/plain; charset=utf-8';
          ctx.body = DENIAL;
          return undefined;
        };
      }
      if (variant.startsWith('rw-')) return require('ratewarden/koa').rateLimit(ours(max, windowMs));
      if (variant.startsWith('hand-')) {
        const decide = handLimit(max, windowMs, onRedis && `redis://127.0.0.1:${redisPort}`, prefix);
        return (ctx, next) => decide(ctx.ip, (d, fields) => {
          for (const [name, value] of fields) ctx.set(name, value);
          if (d.allowed) return next();
          ctx.status = 429;
          ctx.type = 'text/plain; charset=utf-8';
          ctx.body = DENIAL;
          return undefined;
        });
      }
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
    const chains = Object.fromEntries(Object.entries(routes).map(([p, fns]) => [p, compose(fns)]));
    app.use((ctx, next) => (chains[ctx.path] ? chains[ctx.path](ctx) : next()));
    return { handler: app.callback() };
  }

  return Promise.resolve({ express: expressApp, fastify: fastifyApp, koa: koaApp }[framework]());
}

module.exports = { build };
