'use strict';
// The algorithm names come from the core's table (the addon's algorithms()): the option check uses them, and the
// Algorithm type of index.d.ts, which cannot be computed, must name exactly them.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { Limiter, codes } = require('ratewarden');
const native = require('../../node/lib/native');

test("index.d.ts's Algorithm type names the core's algorithms, in order", () => {
  const dts = fs.readFileSync(path.join(__dirname, '..', '..', 'node', 'index.d.ts'), 'utf8');
  const type = /export type Algorithm = ([^;]+);/.exec(dts);
  assert.ok(type, 'index.d.ts declares the Algorithm type');
  assert.deepEqual([...type[1].matchAll(/'(\w+)'/g)].map((m) => m[1]), native.algorithms());
});

test("the Limiter takes every algorithm of the core, and names them all when refusing another", () => {
  for (const algorithm of native.algorithms()) {
    assert.equal(new Limiter({ policy: '1/s', algorithm }).policies[0].algorithm, algorithm);
  }
  assert.throws(
    () => new Limiter({ policy: '1/s', algorithm: 'leaky' }),
    (e) => e.code === codes.INVALID_ARGUMENT && native.algorithms().every((a) => e.message.includes(`"${a}"`)),
  );
});
