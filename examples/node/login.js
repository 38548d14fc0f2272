'use strict';
// Login protection with Express: at most 5 login attempts per username per minute, and 100 requests per minute
// per client address for the whole app. Set RATEWARDEN_STORE=redis://127.0.0.1:6379 to share the limits with every
// other process (Node, Python, C) that uses the same Redis.
//
//   node examples/node/login.js            # listens on 127.0.0.1:3000 (PORT, HOST to change)
//   curl -i -d user=alice http://127.0.0.1:3000/login
//   node examples/node/burst.js http://127.0.0.1:3000      # 7 attempts, as a table of statuses and fields

const express = require('express');
const { rateLimit } = require('ratewarden/express');

const store = process.env.RATEWARDEN_STORE || 'memory://';
const app = express();

app.use(rateLimit({ limit: 100, window: 60_000, store }));

app.post(
  '/login',
  express.urlencoded({ extended: false }),
  rateLimit({
    policy: '5/minute',
    store,
    // Counted as "/login:<user>", the route's name, which every process (and Flask's /login route: every adapter
    // names a route by its path) shares.
    key: 'body:user',
    message: 'Too many login attempts, try again later.',
  }),
  (req, res) => res.send(`checked the password of ${req.body.user}\n`),
);

const server = app.listen(Number(process.env.PORT || 3000), process.env.HOST || '127.0.0.1', () => {
  const { address, port } = server.address();
  console.log(`login example on http://${address}:${port} (store ${store})`);
});
process.on('SIGTERM', () => server.close());
