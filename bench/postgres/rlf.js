'use strict';
// rate-limiter-flexible's RateLimiterPostgres (with `pg`) at N concurrent callers, each consuming one point on random
// keys of 100,000 with a limit that allows everything. Prints decisions per second.
//   node bench/postgres/rlf.js PORT CALLERS SECONDS
const { Pool } = require('pg');
const { RateLimiterPostgres } = require('rate-limiter-flexible');

async function main() {
  const [port, callers, seconds] = process.argv.slice(2).map(Number);
  // One connection per caller, as pgbench has: the pool never makes a caller wait.
  const pool = new Pool({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres', max: callers });
  const limiter = await new Promise((resolve, reject) => {
    const rl = new RateLimiterPostgres(
      { storeClient: pool, tableName: 'rlf_bench', points: 1000000000, duration: 3600, clearExpiredByTimeout: false },
      (err) => (err ? reject(err) : resolve(rl)),
    );
  });
  await limiter.consume('warm-up');
  let total = 0;
  let stop = false;
  let x = 88172645463325252n;
  const next = () => {
    x ^= (x << 13n) & 0xffffffffffffffffn;
    x ^= x >> 7n;
    x ^= (x << 17n) & 0xffffffffffffffffn;
    return Number(x % 100000n);
  };
  const caller = async () => {
    while (!stop) {
      await limiter.consume(`user${next()}`);
      total++;
    }
  };
  const running = Array.from({ length: callers }, caller);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  stop = true;
  await Promise.all(running);
  console.log(Math.round(total / seconds));
  await pool.end();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
