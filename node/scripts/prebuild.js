#!/usr/bin/env node
// Builds the prebuilt addon that the npm tarball ships for this platform: hiredis and OpenSSL linked in (so it loads
// where neither is installed), symbols stripped, copied to prebuilds/<platform>-<arch>/ratewarden.node. Runs before
// `npm pack` (the `prepack` script); the build directory build-node-prebuild/ is kept so a second pack only relinks.
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { root, prebuilt } = require('../lib/addon_paths');

const out = path.join(root, 'build-node-prebuild');
const build = spawnSync(process.execPath, [path.join(__dirname, 'build.js'), '--static', '--out', out], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status === null ? 1 : build.status);

fs.mkdirSync(path.dirname(prebuilt), { recursive: true });
fs.copyFileSync(path.join(out, 'Release', 'ratewarden.node'), prebuilt);
const strip = spawnSync('strip', ['--strip-unneeded', prebuilt], { stdio: 'inherit' });
if (strip.status !== 0) console.warn('ratewarden: strip failed; the prebuilt addon keeps its symbols');
console.log(`ratewarden: prebuilt ${path.relative(root, prebuilt)} (${(fs.statSync(prebuilt).size / 1e6).toFixed(1)} MB)`);
