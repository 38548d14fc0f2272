#include "ratewarden/version.hpp"

namespace ratewarden {

const char* version() { return RATEWARDEN_VERSION; }

}  // namespace ratewarden
