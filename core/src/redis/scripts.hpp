// The Lua scripts, embedded at build time from core/src/algorithms/ (internal).
#pragma once

#include <string>

#include "ratewarden/policy.hpp"

namespace ratewarden {

struct LuaScript {
  std::string body;
  std::string sha;  // what EVALSHA calls it
};

const LuaScript& lua_script(Algorithm algorithm);

}  // namespace ratewarden
