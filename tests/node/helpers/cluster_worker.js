'use strict';
// A node:cluster worker of cluster_workers.test.js: its own limiter on the shared Redis, 50 hits on its own key,
// then it reports its decisions to the primary and waits to be told to exit (so that all workers are connected at
// once).

const cluster = require('node:cluster');
const { Limiter } = require('ratewarden');

async function main() {
  const { url, prefix } = JSON.parse(process.env.RW_WORKER);
  const id = cluster.worker.id;
  const limiter = new Limiter({ policy: `${1000 * id}/day`, store: url, prefix });
  const seen = [];
  for (let i = 0; i < 50; i++) {
    const d = await limiter.hit(`worker${id}`);
    seen.push([d.limit, d.used]);
  }
  process.send({ id, seen });
  process.on('message', (m) => {
    if (m === 'exit') process.exit(0);
  });
}

main().catch((error) => {
  process.send({ error: String(error.stack) });
  process.exit(1);
});
