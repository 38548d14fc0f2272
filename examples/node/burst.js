'use strict';
// Sends a burst of login attempts to the login example and prints what came back:
//   node examples/node/burst.js http://127.0.0.1:3000

const base = process.argv[2] || 'http://127.0.0.1:3000';
const users = ['alice', 'alice', 'alice', 'alice', 'alice', 'alice', 'bob'];

async function main() {
  const rows = [['attempt', 'user', 'status', 'RateLimit', 'Retry-After']];
  let policy;
  for (const [i, user] of users.entries()) {
    const res = await fetch(`${base}/login`, { method: 'POST', body: new URLSearchParams({ user }) });
    await res.arrayBuffer();
    policy = res.headers.get('ratelimit-policy');
    rows.push([String(i + 1), user, String(res.status), res.headers.get('ratelimit') ?? '-',
      res.headers.get('retry-after') ?? '-']);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  for (const r of rows) console.log(r.map((cell, c) => cell.padEnd(widths[c])).join('  ').trimEnd());
  console.log(`RateLimit-Policy: ${policy}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
