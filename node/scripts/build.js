#!/usr/bin/env node
// Builds the native addon from source (the `install` script of the package): cmake-js drives the project's CMake
// with RATEWARDEN_BUILD_NODE=ON. Node's headers come from the local installation (npm_config_nodedir, else the
// prefix of this node binary): nothing is downloaded. When something is missing, says what to install.
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
const NEEDS =
  'ratewarden builds its native addon on install. It needs a C++17 compiler, CMake >= 3.18, pkg-config, hiredis ' +
  'and the Node headers. On Debian/Ubuntu:\n' +
  '  apt-get install g++ cmake pkg-config libhiredis-dev\n' +
  'then, with the headers of this Node (for Debian\'s nodejs they are in /usr/include/node):\n' +
  '  npm_config_nodedir=/usr npm rebuild ratewarden';

function fail(what) {
  console.error(`\nratewarden: ${what}\n\n${NEEDS}\n`);
  process.exit(1);
}

function has(command, args) {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

function nodeHeaders() {
  const candidates = [process.env.npm_config_nodedir, path.resolve(process.execPath, '..', '..')].filter(Boolean);
  return candidates.find((dir) => fs.existsSync(path.join(dir, 'include', 'node', 'node_api.h')));
}

if (!has('cmake', ['--version'])) fail('cmake was not found on PATH.');
if (!has('c++', ['--version']) && !has('g++', ['--version'])) fail('no C++ compiler (c++ or g++) was found on PATH.');
if (!has('pkg-config', ['--exists', 'hiredis'])) fail('pkg-config does not find hiredis (libhiredis-dev).');
const nodedir = nodeHeaders();
if (!nodedir) {
  fail(`the Node headers (include/node/node_api.h) are not in ${process.env.npm_config_nodedir || 'npm_config_nodedir'} ` +
       `nor next to ${process.execPath}; they are never downloaded.`);
}

const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
const args = [cmakeJs, 'compile', '--directory', root, '--out', path.join(root, 'build-node'),
  '--CDRATEWARDEN_BUILD_NODE=ON', '--CDRATEWARDEN_BUILD_CAPI=OFF', '--CDRATEWARDEN_BUILD_TESTS=OFF',
  '--CDRATEWARDEN_BUILD_EXAMPLES=OFF'];
const env = { ...process.env, npm_config_nodedir: nodedir,
  CMAKE_BUILD_PARALLEL_LEVEL: process.env.CMAKE_BUILD_PARALLEL_LEVEL || String(require('node:os').availableParallelism()) };
const result = spawnSync(process.execPath, args, { stdio: 'inherit', env });
if (result.status !== 0) fail('the native build failed (see the compiler output above).');
