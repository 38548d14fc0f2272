'use strict';
// Loads the native addon, built from source when the package was installed (node/scripts/build.js).

const path = require('node:path');

const addonPath = path.join(__dirname, '..', '..', 'build-node', 'Release', 'ratewarden.node');

function load() {
  try {
    return require(addonPath);
  } catch (cause) {
    const error = new Error(
      `ratewarden: cannot load its native addon (${addonPath}): ${cause.message}\n` +
        'It is built when the package is installed and needs a C++17 compiler, CMake, pkg-config, hiredis and the ' +
        'Node headers. On Debian/Ubuntu:\n' +
        '  apt-get install g++ cmake pkg-config libhiredis-dev\n' +
        '  npm_config_nodedir=/usr npm rebuild ratewarden',
      { cause },
    );
    error.code = 'ERR_RATEWARDEN_NATIVE';
    throw error;
  }
}

module.exports = load();
