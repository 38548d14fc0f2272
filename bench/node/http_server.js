'use strict';
// One Express app for the HTTP benchmark, forked by http.js: node http_server.js <variant> <redis port> <4|5>, with
// Express 4 or 5 from bench/node/express/node_modules. It listens on a free loopback port and sends that port to its
// parent. Two routes, each answering a short text:
// - "/": a limit of 10^9 per hour per client address, so every request is allowed and pays for a full decision;
// - "/denied": 1 per day per client address, used up here before the port is sent, so every request is refused.

const http = require('node:http');
const path = require('node:path');

const [variant, redisPort, expressVersion] = process.argv.slice(2);
const express = require(path.join(__dirname, 'express', 'node_modules', `express${expressVersion}`));
const LIMIT = 1e9;
const WINDOW_MS = 3_600_000;
const DAY_MS = 86_400_000;

// The middleware of a route, allowing `limit` per `windowMs`.
function middleware(limit, windowMs) {
  switch (variant) {
    case 'bare':
      return [];
    case 'ratewarden-memory':
      return [require('ratewarden/express').rateLimit({ limit, window: windowMs, headers: 'draft-7' })];
    case 'ratewarden-redis':
      return [require('ratewarden/express').rateLimit({ limit, window: windowMs, headers: 'draft-7',
        store: `redis://127.0.0.1:${redisPort}`, prefix: `bench-http-${process.pid}` })];
    case 'erl-memory':
      return [require('express-rate-limit').rateLimit({ limit, windowMs, standardHeaders: 'draft-7',
        legacyHeaders: false })];
    case 'erl-redis': {
      const Redis = require('ioredis');
      const { RedisStore } = require('rate-limit-redis');
      const client = new Redis({ port: Number(redisPort), host: '127.0.0.1' });
      return [require('express-rate-limit').rateLimit({ limit, windowMs, standardHeaders: 'draft-7',
        legacyHeaders: false, store: new RedisStore({ sendCommand: (...args) => client.call(...args),
          prefix: `bench-http-${process.pid}:` }) })];
    }
    default:
      throw new Error(`unknown variant ${variant}`);
  }
}

function get(port, route) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: route }, (res) => res.resume().on('end', resolve)).on('error', reject);
  });
}

const app = express();
const hello = (req, res) => res.send('hello\n');
app.get('/', ...middleware(LIMIT, WINDOW_MS), hello);
app.get('/denied', ...middleware(1, DAY_MS), hello);
const server = app.listen(0, '127.0.0.1', async (error) => {
  if (error) throw error;
  const { port } = server.address();
  await get(port, '/denied');  // the one request of the day (the bench's requests all come from 127.0.0.1)
  process.send(port);
});
