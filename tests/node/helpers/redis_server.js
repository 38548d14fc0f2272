'use strict';
// Throwaway redis-server processes on loopback for the tests: a free port, a fresh directory, stopped by PID.
// A missing redis-server is an error, never a skip.

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// One command on a fresh connection; resolves with the first line of the reply (enough for the tests' needs).
function command(port, ...args) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
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

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class RedisServer {
  constructor() {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ratewarden-node-redis-'));
    this.port = 0;
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start() {
    if (this.port === 0) this.port = await freePort();
    execFileSync('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly',
      'no', '--daemonize', 'yes', '--pidfile', path.join(this.dir, 'redis.pid'), '--dir', this.dir,
      '--enable-debug-command', 'yes']);
    for (let i = 0; i < 200; i++) {
      if (await command(this.port, 'PING').then(() => true, () => false)) return this;
      await sleep(25);
    }
    throw new Error(`redis-server on port ${this.port} did not answer PING`);
  }

  async stop() {
    const pidFile = path.join(this.dir, 'redis.pid');
    if (!fs.existsSync(pidFile)) return;
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
    for (let i = 0; i < 200; i++) {
      try {
        process.kill(pid, 0);
      } catch {
        break;
      }
      await sleep(10);
    }
    fs.rmSync(pidFile, { force: true });
  }

  async close() {
    await this.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  command(...args) {
    return command(this.port, ...args);
  }
}

module.exports = { RedisServer, freePort, sleep };
