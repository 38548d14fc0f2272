'use strict';
// Real redis-server processes for the tests, started by tests/servers/launch.py. The launcher is their parent: it
// SIGKILLs them and removes their directories when its stdin closes, so they die with this process however it ends.
// A missing redis-server is an error, never a skip.

const { spawn } = require('node:child_process');
const net = require('node:net');
const path = require('node:path');
const readline = require('node:readline');

const LAUNCHER = path.join(__dirname, '..', '..', 'servers', 'launch.py');

// One command on a fresh connection; resolves with the first line of the reply (enough for the tests' needs).
function command(where, ...args) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(where);
    socket.setTimeout(10000, () => socket.destroy(new Error(`redis ${args[0]}: no reply`)));
    socket.once('error', reject);
    socket.once('data', (data) => {
      socket.end();
      const line = data.toString('latin1').split('\r\n')[0];
      if (line.startsWith('-')) reject(new Error(line.slice(1)));
      else resolve(line.slice(1));
    });
    socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join('')}`);
  });
}

// One launch.py process: `ready` resolves with its first JSON line; send() writes a command and resolves its reply.
class Launcher {
  constructor(flags) {
    this.child = spawn('python3', [LAUNCHER, ...flags], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.exited = new Promise((resolve) => this.child.once('close', resolve));
    this.pending = [];
    const gone = () => {
      for (const resolve of this.pending.splice(0)) resolve({ ok: false, error: 'exited (see its error above)' });
    };
    this.child.once('error', gone);
    this.child.stdin.on('error', () => {}); // a launcher that died fails the pending reply instead
    const lines = readline.createInterface({ input: this.child.stdout });
    lines.on('line', (line) => this.pending.shift()?.(JSON.parse(line)));
    lines.on('close', gone);
    this.ready = this.receive('launch.py');
  }

  receive(what) {
    return new Promise((resolve) => this.pending.push(resolve)).then((reply) => {
      if (!reply.ok) throw new Error(`${what}: ${reply.error}`);
      return reply;
    });
  }

  send(line) {
    const reply = this.receive(`launch.py ${line}`);
    this.child.stdin.write(`${line}\n`);
    return reply;
  }

  // End of its stdin: it kills the servers and removes their directories, then exits.
  async close() {
    this.child.stdin.end();
    await this.exited;
  }
}

function launchFlags({ tls = false, tlsOnly = false, unix = false }) {
  return [...(tlsOnly ? ['--tls-only'] : tls ? ['--tls'] : []), ...(unix ? ['--unix'] : [])];
}

function required(value, what) {
  if (value === null || value === undefined) throw new Error(`this test server has no ${what}`);
  return value;
}

// One redis-server: a RedisServer, or a node of a RedisCluster.
class RedisNode {
  constructor() {
    this.port = 0; // 0 when TLS only
    this.tlsPort = 0; // 0 without TLS
    this.unixPath = null;
    this.dir = null; // its working directory, removed with it
    this.pid = null; // null while killed
    this.tls = null; // { ca, cert, key, wrongCa }: the CA of its certificate, a client certificate, an unrelated CA
  }

  attach(launcher, ready, index) {
    const node = ready.nodes[index];
    Object.assign(this, { launcher, index, port: node.port ?? 0, tlsPort: node.tls_port ?? 0, unixPath: node.unix,
      dir: node.dir, pid: node.pid, urls: node });
    if (ready.tls) this.tls = { ca: ready.tls.ca, cert: ready.tls.cert, key: ready.tls.key, wrongCa: ready.tls.wrong_ca };
    return this;
  }

  get url() { return required(this.urls?.url, 'plain port'); } // redis://127.0.0.1:P
  get tlsUrl() { return required(this.urls?.tls_url, 'TLS port'); } // rediss://127.0.0.1:TP?tls_ca=CA
  get unixUrl() { return required(this.urls?.unix_url, 'Unix socket'); } // redis+unix://PATH

  async control(verb) {
    this.pid = (await this.launcher.send(`${verb} ${this.index}`)).pid;
  }

  start() { return this.control('start'); } // after kill(): on the same port(s) and socket, once it answers PING
  kill() { return this.control('kill'); } // SIGKILL: the abrupt death of a server
  stop() { return this.control('stop'); } // SIGSTOP: a server that hangs
  cont() { return this.control('cont'); } // SIGCONT

  // On the plain port, else the Unix socket.
  command(...args) {
    return command(this.port ? { port: this.port, host: '127.0.0.1' } : { path: this.unixPath }, ...args);
  }
}

// One server on free loopback ports in a fresh directory. Options: args (extra redis-server arguments), tls, tlsOnly,
// unix. The first start() launches it; after kill(), start() restarts it.
class RedisServer extends RedisNode {
  constructor(options = {}) {
    super();
    this.options = options;
  }

  async start() {
    if (this.launcher) return super.start();
    const args = this.options.args ?? [];
    const launcher = new Launcher([...launchFlags(this.options), ...(args.length ? ['--', ...args] : [])]);
    return this.attach(launcher, await launcher.ready, 0);
  }

  async close() {
    await this.launcher?.close();
  }
}

// Masters joined by `redis-cli --cluster create`, every node agreeing on the slot map. Options: masters (3), tls,
// tlsOnly, unix.
class RedisCluster {
  constructor(options = {}) {
    this.options = options;
    this.nodes = [];
  }

  async start() {
    this.launcher = new Launcher([...launchFlags(this.options), '--cluster', String(this.options.masters ?? 3)]);
    const ready = await this.launcher.ready;
    this.nodes = ready.nodes.map((_, i) => new RedisNode().attach(this.launcher, ready, i));
    this.urls = ready.cluster;
    this.tls = this.nodes[0].tls;
    return this;
  }

  get url() { return required(this.urls?.url, 'plain ports'); } // redis+cluster://127.0.0.1:P1,...
  get tlsUrl() { return required(this.urls?.tls_url, 'TLS ports'); } // rediss+cluster://127.0.0.1:TP1,...?tls_ca=CA

  async close() {
    await this.launcher?.close();
  }
}

// A throwaway PostgreSQL cluster (launch.py --postgres): a fresh copy of one initdb, a free loopback port. kill,
// start, stop and cont act on the postmaster and every backend.
class PostgresServer extends RedisNode {
  async start() {
    if (this.launcher) return super.start();
    const launcher = new Launcher(['--postgres']);
    return this.attach(launcher, await launcher.ready, 0);
  }

  async close() {
    await this.launcher?.close();
  }
}

module.exports = { RedisServer, RedisCluster, PostgresServer };
