// Type test (tsc -p tests/node/types): the shipped declarations accept the documented uses and reject misuse.
import express = require('express');
import ratewarden = require('ratewarden');
import rw = require('ratewarden/express');
import Fastify = require('fastify');
import Koa = require('koa');
import ratewardenFastify = require('ratewarden/fastify');
import rwKoa = require('ratewarden/koa');
import rwPrometheus = require('ratewarden/prometheus');
import promClient = require('prom-client');
import rwOtel = require('ratewarden/opentelemetry');
import otelApi = require('@opentelemetry/api');

async function api(): Promise<void> {
  const limiter = new ratewarden.Limiter({ policy: '100/minute', store: 'redis://127.0.0.1:6379', onStoreError: 'allow' });
  const d: ratewarden.Decision = await limiter.hit('user:1', { cost: 2 });
  const allowed: boolean = d.allowed;
  const wait: number = d.retryAfterMs + d.resetAfterMs + d.remaining + d.limit + d.used + d.policyIndex;
  await limiter.hit(Buffer.from('binary'));
  const many: ratewarden.Decision[] = await limiter.hitMany(['a', 'b']);
  const nothing: void = await limiter.reset('a');
  const peeked = await limiter.peek('a');
  const sync: ratewarden.Decision = new ratewarden.Limiter({ policy: '5/second', algorithm: 'gcra', burst: 10 }).hitSync('k');
  const clock = new ratewarden.TestClock(1_000_000);
  clock.nowUs += 5;
  const store = new ratewarden.Store('memory://', { testClock: clock });
  const kinds: boolean[] = [store.inMemory, store.shared];
  const ok: boolean = new ratewarden.Limiter({ policy: '1/s', store }).allowSync('k', { cost: 1 });
  const stats: ratewarden.StoreStats = store.stats();
  const held: number = stats.keys + stats.maxKeys + stats.evictions;
  const rates: readonly ratewarden.Rate[] = new ratewarden.Limiter({ policy: '1/s', store }).policies;
  try {
    await limiter.hit('');
  } catch (e) {
    const code: ratewarden.ErrorCode = (e as ratewarden.RatewardenError).code;
    if (code === ratewarden.codes.STORE_TIMEOUT) console.log('timeout');
  }
  console.log(allowed, wait, many, nothing, peeked, sync, rates, kinds, ok, held, ratewarden.version);

  // Figures and events.
  const named = new ratewarden.Limiter({ policy: '5/minute', name: 'login' });
  const mine: ratewarden.LimiterStats = named.stats();
  const label: string = named.name + mine.name;
  const decided: number = mine.allowed + mine.denied + mine.cost + mine.fallbacks;
  const calls: number = stats.calls.ok + stats.calls.timeout + stats.calls.unavailable + stats.calls.error +
    stats.circuitsOpen + stats.circuitOpenings + stats.connectionsOpen + stats.expiredDrops + stats.poolSize + stats.sweeps;
  const what: boolean = stats.network || stats.hybrid || stats.name === '';
  const all: ratewarden.LimiterStats[] = ratewarden.limiterStats();
  const stores: ratewarden.StoreStats[] = ratewarden.storeStats();
  for (const f of ratewarden.metricFamilies()) {
    const kind: 'counter' | 'gauge' | 'histogram' = f.type;
    for (const s of f.samples) console.log(f.name, f.help, kind, s.labels.limiter, s.value);
    for (const h of f.histograms) console.log(h.buckets.map(([le, n]) => le * n), h.sum, h.count, h.labels);
  }
  const text: string = ratewarden.prometheusText();
  ratewarden.events.on('event', (e: ratewarden.RatewardenEvent) => {
    const k: ratewarden.EventKind = e.kind;
    if (e.warning) console.warn(k, e.store, e.message, e.suppressed);
  });
  console.log(label, decided, calls, what, all, stores, text);
  // @ts-expect-error a name is a string
  new ratewarden.Limiter({ policy: '1/s', name: 1 });
  // @ts-expect-error not an event kind
  const wrong: ratewarden.EventKind = 'store_down';

  // @ts-expect-error the policy is required
  new ratewarden.Limiter({});
  // @ts-expect-error not an algorithm
  new ratewarden.Limiter({ policy: '1/s', algorithm: 'leaky' });
  // @ts-expect-error a cost is a number
  await limiter.hit('k', { cost: '2' });
  // @ts-expect-error keys are strings or bytes
  await limiter.hit(42);
  // @ts-expect-error decisions are read-only
  d.allowed = false;
  // @ts-expect-error allowSync answers a boolean, not a decision
  new ratewarden.Limiter({ policy: '1/s' }).allowSync('k').remaining;
}

async function pacing(limiter: ratewarden.Limiter): Promise<void> {
  const slot: ratewarden.Reservation = await limiter.acquire('partner-api', { cost: 1, timeoutMs: 500,
    signal: AbortSignal.timeout(1000) });
  const waited: number = slot.waitMs + slot.waitUs;
  const send = limiter.wrap(async (host: string, n: number) => host.length + n, { key: (host) => `api:${host}` });
  const sent: number = await send('example.org', 1);
  const fixed = limiter.wrap((n: number) => n * 2, { key: Buffer.from('k'), timeoutMs: 0 });
  const doubled: number = await fixed(21);
  try {
    await limiter.acquire('partner-api', { timeoutMs: 0 });
  } catch (e) {
    if (e instanceof ratewarden.RateLimitTimeoutError) console.log(e.decision.retryAfterMs, e.timeoutMs, e.code);
  }
  const refusal = new ratewarden.RateLimitTimeoutError('partner-api', await limiter.peek('partner-api'), 500);
  const timeoutMs: number | undefined = refusal.timeoutMs;
  const codes: ratewarden.ErrorCode[] = [ratewarden.codes.NATIVE, ratewarden.codes.NO_KEY, refusal.code];
  console.log(timeoutMs, codes);
  // @ts-expect-error its constructor takes the key, the refusal and the timeout, not a message
  new ratewarden.RateLimitTimeoutError('the partner is busy');
  console.log(slot, waited, sent, doubled);
  // @ts-expect-error the paced function keeps the parameters of fn
  await send(1, 1);
  // @ts-expect-error wrap needs a key
  limiter.wrap(async () => 1, { cost: 1 });
  // @ts-expect-error timeoutMs is a number of ms
  await limiter.acquire('k', { timeoutMs: '1s' });
}

const app = express();
app.use(rw.rateLimit({ limit: 100, window: 60_000, headers: 'draft-7', legacyHeaders: true }));
app.post(
  '/login',
  rw.rateLimit({
    policy: '5/minute',
    key: (req) => `login:${String(req.body.user)}`,
    skip: async (req) => req.ip === '127.0.0.1',
    handler: (req, res, next, decision) => res.status(429).json({ retryAfterMs: decision.retryAfterMs }),
    onKeyError: (req, res) => res.status(400).end(),
    onStoreError: 'deny',
  }),
  (req, res) => res.send(req.rateLimit?.remaining),
);
const key: string = rw.clientKey('2001:db8::1');
// @ts-expect-error not a header style
rw.rateLimit({ headers: 'draft-9' });
rw.rateLimit({ key: 'ip' });

// One option set for every adapter: keys from any part of the request, problem+json, shadow, scopes, store errors.
const shared = { policy: '10/second', scope: 'api', problem: true, shadow: false, skippedHeader: 'RateLimit-Skipped',
  onStoreError: 'allow', logger: console, logInterval: 5000 } as const;
const mw = rw.rateLimit({ ...shared, key: ['ip', 'header:x-api-key', 'body:user', 'user', (req) => req.get('x-tenant')] });
const scope: string = mw.limiter.scope;
const denied: number = mw.limiter.metrics.denied;
rw.rateLimit({ key: (req) => Number(req.get('x-id')) });  // a number is a key
rw.rateLimit({ policy: '5/minute', key: 'body:user', countWhen: 'failure' });
rw.rateLimit({ countWhen: (req, res) => res.statusCode === 401 });
// @ts-expect-error not a countWhen
rw.rateLimit({ countWhen: 'errors' });
// @ts-expect-error not a key spec
rw.rateLimit({ key: 'cookie:session' });
// @ts-expect-error problem is a boolean
rw.rateLimit({ problem: 'yes' });

async function fastifyApp(): Promise<void> {
  const app = Fastify();
  await app.register(ratewardenFastify, { ...shared, global: true, hook: 'onRequest', key: (request) => request.ip });
  app.get('/login', { config: { rateLimit: { policy: '5/minute', key: 'body:user' } } }, async (request) =>
    request.rateLimit?.remaining);
  app.get('/health', { config: { rateLimit: false } }, async () => 'ok');
  await app.register(ratewardenFastify.ratewarden, { global: false });
  // @ts-expect-error not a hook
  await app.register(ratewardenFastify, { hook: 'onSend' });
}

const koa = new Koa();
koa.use(rwKoa.rateLimit({ ...shared, key: (ctx) => ctx.state.user?.id, handler: (ctx, d) => { ctx.body = d.retryAfterMs; } }));
const koaMw: number = rwKoa.rateLimit().limiter.metrics.allowed;
// @ts-expect-error Koa's handler takes (ctx, decision)
rwKoa.rateLimit({ handler: (req: unknown, res: unknown, next: unknown, d: unknown) => undefined });

const registered: string[] = rwPrometheus.register();
rwPrometheus.register(new promClient.Registry());
rwPrometheus.register(new promClient.Registry<promClient.OpenMetricsContentType>());
// @ts-expect-error a registry, not its name
rwPrometheus.register('default');

const registration: rwOtel.Registration = rwOtel.register();
rwOtel.register(otelApi.metrics.getMeterProvider());
const stopped: boolean = registration.unregister();
const kinds: ('counter' | 'upDownCounter' | 'gauge')[] = rwOtel.instruments().map((i) => i.kind);
const otelName: string = rwOtel.instrumentName('ratewarden_decisions_total', 'counter', '{decision}');
// @ts-expect-error a meter provider, not a registry
rwOtel.register(new promClient.Registry());

console.log(api, pacing, key, scope, denied, fastifyApp, koaMw, registered, stopped, kinds, otelName);
