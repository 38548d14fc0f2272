// ratewarden version: the single source of truth (CMake reads these lines).
#pragma once

#define RATEWARDEN_VERSION_MAJOR 0
#define RATEWARDEN_VERSION_MINOR 1
#define RATEWARDEN_VERSION_PATCH 0
#define RATEWARDEN_VERSION_STRING "0.1.0"

// Version of the Redis key format (docs/key-format.md): bumped when stored state stops being shared.
#define RATEWARDEN_KEY_FORMAT_VERSION 1
