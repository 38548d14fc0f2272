'use strict';
// One app of the adapters benchmark over HTTP (adapters_apps.js), forked by adapters.js:
//   node adapters_server.js <framework> <variant> <redis port>
// It listens on a free loopback port, uses up the day's one request of "/denied" (the bench's requests all come
// from 127.0.0.1), and sends the port to its parent.

const http = require('node:http');
const { build } = require('./adapters_apps');

const [framework, variant, redisPort] = process.argv.slice(2);

function get(port, route) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: route }, (res) => res.resume().on('end', resolve)).on('error', reject);
  });
}

(async () => {
  const app = await build(framework, variant, redisPort);
  let server;
  if (app.fastify) {
    await app.fastify.listen({ port: 0, host: '127.0.0.1' });
    server = app.fastify.server;
  } else {
    server = http.createServer(app.handler);
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  }
  const { port } = server.address();
  await get(port, '/denied');
  process.send(port);
})();
