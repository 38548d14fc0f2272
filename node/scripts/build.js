#!/usr/bin/env node
// Builds the native addon from source: cmake-js drives the project's CMake with RATEWARDEN_BUILD_NODE=ON (Ninja when
// installed: cmake-js picks it, and its [n/N] lines show how far along the build is). Node's headers come from the local installation
// (npm_config_nodedir, else the prefix of this node binary): nothing is downloaded. When something is missing, says
// in one line what, then what to install.
//   build.js                      into build-node/ (what install.js runs when no prebuilt binary fits)
//   build.js --static --out DIR   hiredis and OpenSSL linked in (the prebuilt binary: prebuild.js)
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
const NEEDS =
  'Building it needs a C++17 compiler, CMake >= 3.18, pkg-config, hiredis, OpenSSL and the Node headers. ' +
  'On Debian/Ubuntu:\n' +
  '  apt-get install g++ cmake pkg-config libhiredis-dev libssl-dev libpq-dev\n' +
  'then, with the headers of this Node (for Debian\'s and NodeSource\'s nodejs they are in /usr/include/node):\n' +
  '  npm_config_nodedir=/usr npm rebuild ratewarden';

function fail(what, needs = NEEDS) {
  console.error(`\nratewarden: ${what}\n\n${needs}\n`);
  process.exit(1);
}

function has(command, args) {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

function nodeHeaders() {
  const candidates = [process.env.npm_config_nodedir, path.resolve(process.execPath, '..', '..')].filter(Boolean);
  return candidates.find((dir) => fs.existsSync(path.join(dir, 'include', 'node', 'node_api.h')));
}

function resolveFromPackage(request) {
  try {
    return require.resolve(request, { paths: [root] });
  } catch {
    return null;
  }
}

const argv = process.argv.slice(2);
const staticDeps = argv.includes('--static');
const outIndex = argv.indexOf('--out');
const out = outIndex >= 0 ? path.resolve(argv[outIndex + 1]) : path.join(root, 'build-node');

const steps = ['check the tools', 'configure and compile (cmake-js)'];
const step = (n) => console.log(`ratewarden: [${n}/${steps.length}] ${steps[n - 1]}`);

step(1);
const cmakeJs = resolveFromPackage('cmake-js/bin/cmake-js');
if (!cmakeJs || !resolveFromPackage('node-addon-api/package.json')) {
  // A folder installed as a link (`npm install ./clone`) runs this script in the folder, whose own dependencies npm
  // has not installed.
  fail(`its build tools (cmake-js, node-addon-api) are not installed next to ${root}.`,
    'npm links a folder instead of copying it, and does not install the folder\'s own dependencies. Run\n' +
    `  npm install --prefix ${root}\n` +
    'once (it installs them there and builds the addon), then install the folder again.');
}
if (!has('cmake', ['--version'])) fail('cmake was not found on PATH.');
if (!has('c++', ['--version']) && !has('g++', ['--version'])) fail('no C++ compiler (c++ or g++) was found on PATH.');
if (!has('pkg-config', ['--exists', 'hiredis'])) fail('pkg-config does not find hiredis (libhiredis-dev).');
const nodedir = nodeHeaders();
if (!nodedir) {
  fail(`the Node headers (include/node/node_api.h) are not in ${process.env.npm_config_nodedir || 'npm_config_nodedir'} ` +
       `nor next to ${process.execPath}; they are never downloaded.`);
}

step(2);
const args = [cmakeJs, 'compile', '--directory', root, '--out', out,
  '--CDRATEWARDEN_BUILD_NODE=ON', '--CDRATEWARDEN_BUILD_CAPI=OFF', '--CDRATEWARDEN_BUILD_SERVER=OFF',
  '--CDRATEWARDEN_BUILD_TESTS=OFF', '--CDRATEWARDEN_BUILD_EXAMPLES=OFF', `--CDRATEWARDEN_STATIC_DEPS=${staticDeps ? 'ON' : 'OFF'}`];
const env = { ...process.env, npm_config_nodedir: nodedir,
  CMAKE_BUILD_PARALLEL_LEVEL: process.env.CMAKE_BUILD_PARALLEL_LEVEL || String(os.availableParallelism()) };
const result = spawnSync(process.execPath, args, { stdio: 'inherit', env });
if (result.status !== 0) fail('the native build failed (see the compiler output above).');
console.log(`ratewarden: built ${path.join(out, 'Release', 'ratewarden.node')}`);
