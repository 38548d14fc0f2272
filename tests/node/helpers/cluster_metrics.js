'use strict';
// node:cluster and prom-client's AggregatorRegistry (tests/node/metrics.test.js): two workers register
// ratewarden/prometheus and make a known load on one limiter name (5 hits on a limit of 3: 3 allowed, 2 denied);
// the primary asks them for their figures once and prints the summed series of that name, one JSON line.

const cluster = require('node:cluster');
const path = require('node:path');
const promClient = require('prom-client');

const lib = path.join(__dirname, '..', '..', '..', 'node', 'lib');
const WORKERS = 2;

if (cluster.isPrimary) {
  const aggregator = new promClient.AggregatorRegistry();
  let ready = 0;
  for (let i = 0; i < WORKERS; i++) {
    cluster.fork().on('message', async (message) => {
      if (message !== 'ready' || ++ready < WORKERS) return;  // (prom-client's own answers come this way too)
      const text = await aggregator.clusterMetrics();
      const series = text.split('\n').filter((l) => l.startsWith('ratewarden_decisions_total{limiter="cluster"'));
      console.log(JSON.stringify(series));
      for (const worker of Object.values(cluster.workers)) worker.kill();
    });
  }
} else {
  new promClient.AggregatorRegistry();  // a worker answers the primary's requests once one is made
  require(path.join(lib, 'prometheus')).register();
  const { Limiter } = require(lib);
  const limiter = new Limiter({ policy: '3/minute', name: 'cluster' });
  for (let i = 0; i < 5; i++) limiter.hitSync('k');
  process.send('ready');
}
