#include "scripts.hpp"

#include <iterator>
#include <vector>

#include "sha1.hpp"

namespace ratewarden {
namespace {

// For each row of algorithm_table.hpp, in table order: prelude.lua + <algorithm>.lua + decide_all.lua from
// core/src/algorithms/, embedded by cmake/embed_lua.cmake.
const char* const kLuaSources[] = {
#include "lua_scripts.inc"
};
static_assert(std::size(kLuaSources) == kAlgorithmCount, "one script per row of algorithm_table.hpp");

}  // namespace

const LuaScript& lua_script(Algorithm algorithm) {
  // Never destroyed: the I/O thread may still send a script (EVAL after NOSCRIPT) while the process exits.
  static const std::vector<LuaScript>* scripts = [] {
    auto* all = new std::vector<LuaScript>;
    for (const char* source : kLuaSources) all->push_back(LuaScript{source, sha1_hex(source)});
    return all;
  }();
  return (*scripts)[static_cast<size_t>(algorithm)];
}

}  // namespace ratewarden
