'use strict';
// One Express app for the HTTP benchmark, forked by http.js: node http_server.js <variant> [redis port]. It listens
// on a free loopback port and sends that port to its parent. Every request is allowed (a limit of 10^9 per hour per
// client address), so every request pays for a full decision.

const express = require('express');

const [variant, redisPort] = process.argv.slice(2);
const LIMIT = 1e9;
const WINDOW_MS = 3_600_000;

function middleware() {
  switch (variant) {
    case 'bare':
      return [];
    case 'ratewarden-memory':
      return [require('ratewarden/express').rateLimit({ limit: LIMIT, window: WINDOW_MS, headers: 'draft-7' })];
    case 'ratewarden-redis':
      return [require('ratewarden/express').rateLimit({ limit: LIMIT, window: WINDOW_MS, headers: 'draft-7',
        store: `redis://127.0.0.1:${redisPort}` })];
    case 'erl-memory':
      return [require('express-rate-limit').rateLimit({ limit: LIMIT, windowMs: WINDOW_MS, standardHeaders: 'draft-7',
        legacyHeaders: false })];
    case 'erl-redis': {
      const Redis = require('ioredis');
      const { RedisStore } = require('rate-limit-redis');
      const client = new Redis({ port: Number(redisPort), host: '127.0.0.1' });
      return [require('express-rate-limit').rateLimit({ limit: LIMIT, windowMs: WINDOW_MS, standardHeaders: 'draft-7',
        legacyHeaders: false, store: new RedisStore({ sendCommand: (...args) => client.call(...args) }) })];
    }
    default:
      throw new Error(`unknown variant ${variant}`);
  }
}

const app = express();
app.get('/', ...middleware(), (req, res) => res.send('ok'));
const server = app.listen(0, '127.0.0.1', (error) => {
  if (error) throw error;
  process.send(server.address().port);
});
