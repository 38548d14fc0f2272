'use strict';
// KeyList (docs/key-lists.md) on the memory store and on Redis: add, has, remove, expiry, bad input. Across
// runtimes: tests/polyglot/test_key_lists.py.

const { after, before, describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { setTimeout: sleep } = require('node:timers/promises');

const { KeyList, Limiter, Store } = require('ratewarden');
const { RedisServer } = require('./helpers/redis_server');

const redis = new RedisServer();
before(() => redis.start());
after(() => redis.close());

for (const kind of ['memory', 'redis']) {
  describe(`KeyList on ${kind}`, () => {
    const url = () => (kind === 'memory' ? 'memory://' : redis.url);

    test('add, has, remove', async () => {
      const store = new Store(url());
      const denied = new KeyList({ name: 'denied-js', store });
      assert.equal(await denied.has('10.0.0.1'), false);
      await denied.add('10.0.0.1');
      await denied.add(Buffer.from([0, 255]));
      assert.equal(await denied.has('10.0.0.1'), true);
      assert.equal(await denied.has(Buffer.from([0, 255])), true);
      assert.ok(await denied.expiresInMs('10.0.0.1') > 3649 * 86400 * 1000);
      await denied.remove('10.0.0.1');
      assert.equal(await denied.has('10.0.0.1'), false);
      assert.equal(await denied.expiresInMs('10.0.0.1'), 0);
      const limiter = new Limiter({ policy: '1/hour', store });
      assert.equal((await limiter.hit('10.0.0.1')).allowed, true);
      assert.equal(await denied.has('10.0.0.1'), false);
    });

    test('an entry lasts its duration from each add', async () => {
      const probation = new KeyList({ name: 'probation-js', store: new Store(url()), durationMs: 200 });
      await probation.add('u');
      await sleep(120);
      await probation.add('u');
      await sleep(120);
      assert.equal(await probation.has('u'), true);
      await sleep(120);
      assert.equal(await probation.has('u'), false);
    });
  });
}

test('bad input', async () => {
  for (const name of ['', 'has space', 'x'.repeat(65), 'brace{', 7, undefined]) {
    assert.throws(() => new KeyList({ name }), { code: 'ERR_RATEWARDEN_INVALID_ARGUMENT' });
  }
  // Named in the ms the caller gave (the core, given µs, would say "got 0 us" for -1).
  for (const [durationMs, got] of [[0, '0'], [-1, '-1'], [0.5, '0.5'], [0.0001, '0.0001'], [3651 * 86400 * 1000,
    '315446400000'], [NaN, 'NaN'], ['1000', '"1000"']]) {
    assert.throws(() => new KeyList({ name: 'ok', durationMs }), { code: 'ERR_RATEWARDEN_INVALID_ARGUMENT',
      message: `durationMs must be a number of ms from 1 to 315360000000 (3650 days), got ${got}` });
  }
  assert.equal(new KeyList({ name: 'ok', durationMs: 1 }).durationMs, 1);
  // An option it does not know is refused (Python's `duration` here would have been a 10-year entry).
  assert.throws(() => new KeyList({ name: 'ok', duration: 900_000 }), { code: 'ERR_RATEWARDEN_INVALID_ARGUMENT',
    message: 'unknown KeyList option "duration" (known: name, store, durationMs)' });
  assert.throws(() => new KeyList(null), { code: 'ERR_RATEWARDEN_INVALID_ARGUMENT',
    message: /KeyList options must be/ });
  const list = new KeyList({ name: 'ok' });
  await assert.rejects(list.add(7), { code: 'ERR_RATEWARDEN_INVALID_ARGUMENT' });
  // A list's keys are a limiter's: 1 to 4096 bytes, its name not counted.
  await assert.rejects(list.add(''), { code: 'ERR_RATEWARDEN_INVALID_ARGUMENT' });
  await assert.rejects(list.add('k'.repeat(4097)), { code: 'ERR_RATEWARDEN_INVALID_ARGUMENT' });
  await list.add('k'.repeat(4096));
  assert.equal(await list.has('k'.repeat(4096)), true);
});
