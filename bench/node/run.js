'use strict';
// Runs every section in one process and prints one table: node bench/node/run.js [redis port]. Without a port it
// starts its own redis-server (tests/servers/launch.py: gone with this process, however it ends). bench/node/run.sh
// sets everything up.

const { RedisServer } = require('../../tests/node/helpers/redis_server');

const sections = {
  memory: require('./memory'), redis: require('./redis'), express: require('./http'), adapters: require('./adapters'),
  inject: require('./adapters_inject'),
};

async function main() {
  const redis = process.argv[2] ? null : await new RedisServer().start();
  const redisPort = redis ? redis.port : Number(process.argv[2]);
  const only = process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',') : Object.keys(sections);
  const rows = [];
  for (const name of only) {
    process.stderr.write(`bench: ${name}...\n`);
    rows.push(...(await sections[name].run(redisPort)));
  }
  await redis?.close();
  const table = [['section', 'measure', 'ratewarden', 'other', 'ratio', 'target', '']];
  for (const r of rows) {
    // A row with atMost (a time over a baseline's) meets its target from below.
    const target = r.target === null ? '-' : `${r.atMost ? '<=' : '>='} ${r.target}`;
    const met = r.atMost ? r.ratio <= r.target : r.ratio >= r.target;
    const verdict = r.target === null ? '' : r.atMost ? (met ? 'met' : 'MISS') : met ? 'ok' : 'BELOW';
    table.push([r.section, r.what, r.ours, r.peer, r.ratio.toFixed(2), target, verdict]);
  }
  const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)));
  for (const row of table) console.log(row.map((cell, c) => cell.padEnd(widths[c])).join('  ').trimEnd());
  console.log('\nmedians of interleaved rounds; ratio: the median of the per-round ratios of ratewarden over the other (for ns: the other over ratewarden);');
  console.log('inject: the best of many short interleaved measures of each app, ratio: ratewarden\'s best over the other\'s');
}

main().then(() => process.exit(0), (error) => {  // the in-process apps' Redis clients would keep it alive
  console.error(error);
  process.exit(1);
});
