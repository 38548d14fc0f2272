#include "scripts.hpp"

#include "sha1.hpp"

namespace ratewarden {

// Generated from core/src/lua/ by cmake/embed_lua.cmake: prelude + algorithm + driver, in Algorithm order.
extern const char* const kLuaSources[5];

const LuaScript& lua_script(Algorithm algorithm) {
  static const LuaScript* scripts = [] {
    static LuaScript all[5];
    for (int i = 0; i < 5; ++i) all[i] = LuaScript{kLuaSources[i], sha1_hex(kLuaSources[i])};
    return all;
  }();
  return scripts[static_cast<int>(algorithm)];
}

}  // namespace ratewarden
