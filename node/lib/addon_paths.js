'use strict';
// Where the native addon can be, in the order it is tried: the package's own build from source, then the prebuilt
// binary for this platform. Shared by the loader (native.js) and the install script (node/scripts/install.js).

const path = require('node:path');

const root = path.join(__dirname, '..', '..');
const platform = `${process.platform}-${process.arch}`;
const built = path.join(root, 'build-node', 'Release', 'ratewarden.node');
const prebuilt = path.join(root, 'prebuilds', platform, 'ratewarden.node');

function candidates() {
  return [built, prebuilt];
}

module.exports = { root, platform, built, prebuilt, candidates };
