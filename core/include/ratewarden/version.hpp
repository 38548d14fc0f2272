#pragma once

// Version of the Redis key format (docs/key-format.md): bumped when stored state stops being shared.
#define RATEWARDEN_KEY_FORMAT_VERSION 1

namespace ratewarden {

// "major.minor.patch". The version's single source is RW_VERSION_* in capi/include/ratewarden.h.
const char* version();

}  // namespace ratewarden
