'use strict';
// One version: the RW_VERSION_* lines of the C header. The addon is built from them; package.json cannot read them,
// so it repeats them (tests/python/test_package.py checks the Python package against the same lines).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { version } = require('ratewarden');
const packageJson = require('ratewarden/package.json');

function headerVersion() {
  const header = fs.readFileSync(path.join(__dirname, '..', '..', 'capi', 'include', 'ratewarden.h'), 'utf8');
  return ['MAJOR', 'MINOR', 'PATCH']
    .map((part) => {
      const match = header.match(new RegExp(`^#define RW_VERSION_${part} (\\d+)$`, 'm'));
      assert.ok(match, `RW_VERSION_${part} not found in the C header`);
      return match[1];
    })
    .join('.');
}

test('package.json and the addon report the version of the C header', () => {
  const expected = headerVersion();
  assert.equal(packageJson.version, expected, 'package.json');
  assert.equal(version, expected, 'the addon');
});
