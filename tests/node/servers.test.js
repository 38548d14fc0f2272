'use strict';
// The test servers (tests/servers/launch.py) through helpers/redis_server.js: each listener they report answers,
// and no server outlives its test process, however that process ends.

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const fs = require('node:fs');
const tls = require('node:tls');
const { setTimeout: sleep } = require('node:timers/promises');
const { RedisServer } = require('./helpers/redis_server');

// The first line a TLS server answers to PING.
function tlsPing(port, options) {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ port, host: '127.0.0.1', servername: 'localhost', ...options }, () =>
      socket.write('PING\r\n'));
    socket.once('error', reject);
    socket.once('data', (data) => {
      socket.end();
      resolve(data.toString().split('\r\n')[0]);
    });
  });
}

// The state letter of /proc/PID/stat ('T' stopped, 'Z' zombie...), or '' when the pid does not exist.
function stateOf(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2];
  } catch {
    return '';
  }
}

// A zombie is dead: nothing may reap orphans here (a container's init often does not).
const alive = (pid) => !['', 'Z'].includes(stateOf(pid));

test('TLS and Unix listeners answer', async () => {
  const redis = new RedisServer({ tlsOnly: true, unix: true });
  await redis.start();
  try {
    assert.throws(() => redis.url, /no plain port/);
    assert.equal(redis.tlsUrl, `rediss://127.0.0.1:${redis.tlsPort}?tls_ca=${redis.tls.ca}`);
    assert.equal(redis.unixUrl, `redis+unix://${redis.unixPath}`);
    const files = { ca: fs.readFileSync(redis.tls.ca), cert: fs.readFileSync(redis.tls.cert),
      key: fs.readFileSync(redis.tls.key) };
    assert.equal(await tlsPing(redis.tlsPort, files), '+PONG');
    await assert.rejects(tlsPing(redis.tlsPort, { ca: fs.readFileSync(redis.tls.wrongCa) }));
    assert.equal(await redis.command('PING'), 'PONG'); // through the Unix socket: there is no plain port
  } finally {
    await redis.close();
  }
});

test('stop, cont, kill and start', async () => {
  const redis = new RedisServer();
  await redis.start();
  try {
    const first = redis.pid;
    await redis.stop();
    assert.equal(stateOf(first), 'T');
    await redis.cont();
    assert.equal(await redis.command('PING'), 'PONG');
    await redis.kill();
    assert.equal(redis.pid, null);
    assert.equal(alive(first), false);
    await redis.start();
    assert.notEqual(redis.pid, first);
    assert.equal(await redis.command('PING'), 'PONG');
  } finally {
    await redis.close();
  }
});

// A child process starts a server and a cluster, prints their pids and directories, and ends without closing them.
const CHILD = `
const { RedisServer, RedisCluster } = require(${JSON.stringify(require.resolve('./helpers/redis_server'))});
(async () => {
  const server = await new RedisServer({ tls: true, unix: true }).start();
  const cluster = await new RedisCluster({ unix: true }).start();
  console.log(JSON.stringify([server, ...cluster.nodes].map((n) => [n.pid, n.dir])));
  const end = process.argv[1];
  if (end === 'sigkill') process.kill(process.pid, 'SIGKILL');
  else if (end === 'abort') process.abort();
  else process.exit(0);
})();
`;

for (const end of ['sigkill', 'abort', 'exit']) {
  test(`no server outlives its test process (${end})`, async () => {
    // ulimit: abort() leaves no core file.
    const stdout = await new Promise((resolve) =>
      execFile('sh', ['-c', 'ulimit -c 0; exec "$0" -e "$1" "$2"', process.execPath, CHILD, end], (_, out) =>
        resolve(out)));
    const servers = JSON.parse(stdout);
    assert.equal(servers.length, 4);
    const deadline = Date.now() + 10000;
    const left = () => servers.filter(([pid, dir]) => alive(pid) || fs.existsSync(dir));
    while (left().length && Date.now() < deadline) await sleep(20);
    assert.deepEqual(left(), []);
  });
}
