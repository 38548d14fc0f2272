'use strict';
// Loads the native addon: a build from source when the package made one (node/scripts/build.js: no prebuilt binary
// fitted, or RATEWARDEN_BUILD_FROM_SOURCE=1), else the prebuilt binary for this platform that the package ships
// (prebuilds/<platform>-<arch>/, node/scripts/prebuild.js). N-API keeps one binary good for every Node >= 20.17.

const { candidates } = require('./addon_paths');
const { codes } = require('./errors');

function load() {
  const failures = [];
  for (const file of candidates()) {
    try {
      return require(file);
    } catch (cause) {
      if (cause.code !== 'MODULE_NOT_FOUND') failures.push(`${file}: ${cause.message}`);
    }
  }
  const error = new Error(
    `ratewarden: cannot load its native addon: ${failures.length ? failures.join('; ') : 'none was built or shipped'}` +
      ` (looked for ${candidates().join(', ')}).\nReinstall to build it from source, which needs a C++17 compiler, ` +
      'CMake, pkg-config, hiredis, OpenSSL and the Node headers. On Debian/Ubuntu:\n' +
      '  apt-get install g++ cmake pkg-config libhiredis-dev libssl-dev\n' +
      '  RATEWARDEN_BUILD_FROM_SOURCE=1 npm_config_nodedir=/usr npm rebuild ratewarden',
  );
  error.code = codes.NATIVE;
  throw error;
}

module.exports = load();
