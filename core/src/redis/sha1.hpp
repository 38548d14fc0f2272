// SHA-1 of a script body: the name EVALSHA calls it by (internal).
#pragma once

#include <string>
#include <string_view>

namespace ratewarden {

// Lower-case hex, as Redis prints it.
std::string sha1_hex(std::string_view data);

}  // namespace ratewarden
