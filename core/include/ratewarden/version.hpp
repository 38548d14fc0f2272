#pragma once

// Version of the Redis key format (docs/key-format.md): bumped when stored state stops being shared;
// from version 2 on it is part of every storage key ("<prefix>:{<key>}:v2:..."), so versions never read each other's.
#define RATEWARDEN_KEY_FORMAT_VERSION 3

namespace ratewarden {

// "major.minor.patch". The version's single source is RW_VERSION_* in capi/include/ratewarden.h.
const char* version();

}  // namespace ratewarden
