'use strict';
// The HTTP gate's decisions (tests/conformance/gate.json) through Node's HttpLimiter, driven as an adapter drives
// it: a route's limits each `run` in turn on one request state until one does not go on, then the 400 of a key
// error, the refusal, or the app's own status and `settle` — with the fields the response would carry (each limit's
// set over the last's, as Express's setHeader does). The memory store runs on a TestClock; "unreachable" is a Redis
// URL whose port nobody listens on. tests/python/test_gate_vectors.py runs the same file through Python's Gate.

const { before, describe, test } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const path = require('node:path');

const { KeyList, Store, TestClock } = require('ratewarden');
const { HttpLimiter, newState, NEXT, DENY, KEY_ERROR, KEY_ERROR_BODY } = require('../../node/lib/http');

const conformance = path.join(__dirname, '..', 'conformance');
const vectors = require(path.join(conformance, 'gate.json'));
const refusals = require(path.join(conformance, 'refusals.json'));
const RATE_LIMIT_ITEM = /"[^"]*";r=(\d+);t=(\d+)/g;
const LISTS = ['allow_list', 'deny_list'];

// How the limiters read the runner's requests: { client, headers (lower-case names), route }.
const access = {
  framework: 'gate-vectors',
  ip: (req) => req.client,
  header: (req, name) => req.headers[name],
  user: () => undefined,
  body: () => undefined,
  route: (req) => req.route,
};
const silent = { warn() {} };

let unreachable;
before(async () => {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  unreachable = `redis://127.0.0.1:${port}?timeout=200ms&connect_timeout=200ms`;
});

async function limitersOf(c, clock) {
  const store = (c.store ?? 'memory') === 'unreachable' ? unreachable : new Store('memory://', { testClock: clock });
  const options = c.options ?? {};
  const lists = {};
  for (const name of LISTS.filter((n) => options[n] !== undefined)) {
    lists[name] = new KeyList({ name, store });
    for (const key of options[name]) await lists[name].add(key);
  }
  const skipHeader = options.skip_header;
  const limiters = c.limits.map((l) => new HttpLimiter({
    policy: l.policy,
    algorithm: l.algorithm ?? 'fixed_window',
    key: l.key ?? 'ip',
    shadow: l.shadow ?? false,
    onStoreError: l.on_store_error ?? 'allow',
    countWhen: l.count_when,
    store,
    allowList: lists.allow_list,
    denyList: lists.deny_list,
    blockDuration: options.block_duration_ms,
    skip: skipHeader === undefined ? undefined : (req) => req.headers[skipHeader] !== undefined,
    logger: silent,
  }, access));
  return { limiters, lists };
}

// The status, fields and { type, body } of a fixed answer (undefined for the app's) of one request, as an adapter
// makes them (express.js).
async function answer(limiters, req, response) {
  const state = newState();
  const fields = {};
  const counted = [];  // [limiter, plan] to settle once the response is made
  let status;
  let fixed;
  for (const limiter of limiters) {
    const plan = await limiter.run(req, undefined, state);
    for (const [name, value] of plan.fields) fields[name] = value;
    if (plan.kind === NEXT) {
      if (plan.key !== undefined) counted.push([limiter, plan]);
      continue;
    }
    if (plan.kind === DENY) {
      status = plan.status;
      fixed = { type: plan.type, body: plan.body };
    } else if (plan.kind === KEY_ERROR) {
      status = 400;
      fixed = { type: 'text/plain; charset=utf-8', body: KEY_ERROR_BODY };
    } else {
      throw plan.error;
    }
    break;
  }
  status ??= response;
  for (const [limiter, plan] of counted) limiter.settle(plan, req, undefined, status);
  return { status, fields, fixed };
}

const rateLimitItems = (fields) =>
  [...(fields.RateLimit ?? '').matchAll(RATE_LIMIT_ITEM)].map((m) => [Number(m[1]), Number(m[2])]);

describe('gate.json', () => {
  for (const c of vectors.cases) {
    test(c.name, async () => {
      const clock = new TestClock(vectors.base_us);
      const { limiters, lists } = await limitersOf(c, clock);
      for (const [n, step] of c.steps.entries()) {
        clock.nowUs = vectors.base_us + step.t;
        const op = step.op ?? 'request';
        if (op !== 'request') {
          await lists[step.list][op](step.key);
          continue;
        }
        const req = { client: step.client, headers: step.headers ?? {}, route: c.route };
        const { status, fields, fixed } = await answer(limiters, req, step.response ?? 200);
        const expect = { skipped: null, ...step.expect };
        const got = {
          status,
          ratelimit: rateLimitItems(fields),
          retry_after: fields['Retry-After'] === undefined ? null : Number(fields['Retry-After']),
          skipped: fields['RateLimit-Skipped'] ?? null,
        };
        if (expect.body !== undefined) {
          const refusal = refusals[expect.body];
          expect.body = { type: refusal.content_type, body: refusal.body };
          got.body = fixed;
        }
        if (expect.shadow_refused !== undefined) {
          got.shadow_refused = limiters.reduce((sum, l) => sum + l.metrics.shadowDenied, 0);
        }
        assert.deepEqual(got, expect, `step ${n}: ${JSON.stringify(step)}`);
      }
    });
  }
});
