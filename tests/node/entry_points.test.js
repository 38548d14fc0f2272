'use strict';
// Each adapter's ES module entry point is its CommonJS module: the same functions, one module instance (one table
// of scopes, one warning per process).

const { test } = require('node:test');
const assert = require('node:assert/strict');

test('import and require give the same adapters', async () => {
  for (const name of ['ratewarden', 'ratewarden/express', 'ratewarden/fastify', 'ratewarden/koa',
    'ratewarden/opentelemetry']) {
    const cjs = require(name);
    const esm = await import(name);
    assert.equal(esm.default, cjs, name);
    for (const [key, value] of Object.entries(esm)) {
      if (key !== 'default') assert.equal(value, cjs[key], `${name}: ${key}`);
    }
    if (name === 'ratewarden') {  // every name of require('ratewarden') can be imported by name
      assert.deepEqual(Object.keys(esm).filter((k) => k !== 'default').sort(), Object.keys(cjs).sort());
    }
  }
  assert.equal(typeof (await import('ratewarden/express')).rateLimit, 'function');
  assert.equal(typeof (await import('ratewarden/koa')).rateLimit, 'function');
  assert.equal(typeof (await import('ratewarden/fastify')).default, 'function');
  assert.equal((await import('ratewarden')).Limiter, require('ratewarden').Limiter);
});
