#!/usr/bin/env node
// The package's `install` script. Uses the prebuilt addon shipped for this platform when it loads here (no compiler,
// CMake or hiredis needed); builds from source (build.js) only when none fits, or when RATEWARDEN_BUILD_FROM_SOURCE=1.
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { root, platform, prebuilt } = require('../lib/addon_paths');

function loads(file) {
  // In a child process: a binary that does not fit (another libc, a missing symbol) must not break this one.
  const child = spawnSync(process.execPath, ['-e', 'require(process.argv[1])', file], { encoding: 'utf8' });
  return { ok: child.status === 0, why: (child.stderr || '').trim().split('\n').find((l) => /Error/.test(l)) };
}

function buildFromSource(why) {
  console.log(`ratewarden: ${why}: building the native addon from source (about a minute; ` +
    'npm shows the compiler\'s progress with --foreground-scripts)');
  const result = spawnSync(process.execPath, [path.join(__dirname, 'build.js')], { stdio: 'inherit' });
  process.exit(result.status === null ? 1 : result.status);
}

const forced = ['1', 'true'].includes(process.env.RATEWARDEN_BUILD_FROM_SOURCE || '');
if (forced) buildFromSource('RATEWARDEN_BUILD_FROM_SOURCE is set');
// A git checkout is being developed: its addon must come from its sources, never from a prebuilt copy of older ones.
if (fs.existsSync(path.join(root, '.git'))) buildFromSource('a git checkout');
if (!fs.existsSync(prebuilt)) buildFromSource(`no prebuilt addon for ${platform} in this package`);
const check = loads(prebuilt);
if (!check.ok) buildFromSource(`the prebuilt addon for ${platform} does not load here (${check.why || 'unknown error'})`);
console.log(`ratewarden: using the prebuilt addon for ${platform} (${path.relative(process.cwd(), prebuilt)}); nothing to build`);
