# hiredis and OpenSSL, the core's two libraries. Linked as shared libraries by default; RATEWARDEN_STATIC_DEPS links
# their static archives instead, with their symbols kept out of the dynamic symbol table, for binaries that must run
# where neither is installed: the release wheel and the Node addon's prebuilt binary (scripts/build_wheel.sh,
# node/scripts/prebuild.js). A missing one is reported in one line that says what to install.
set(RATEWARDEN_INSTALL_HINT
    "apt-get install g++ cmake pkg-config libhiredis-dev libssl-dev libpq-dev (Debian/Ubuntu), dnf install gcc-c++ cmake pkgconf hiredis-devel openssl-devel libpq-devel (Fedora)")

find_package(PkgConfig QUIET)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR " ratewarden: pkg-config was not found; install it and hiredis: ${RATEWARDEN_INSTALL_HINT}")
endif()
pkg_check_modules(HIREDIS QUIET IMPORTED_TARGET hiredis)
if(NOT HIREDIS_FOUND)
  message(FATAL_ERROR " ratewarden: hiredis was not found (pkg-config hiredis); install it: ${RATEWARDEN_INSTALL_HINT}")
endif()

if(RATEWARDEN_STATIC_DEPS)
  set(OPENSSL_USE_STATIC_LIBS TRUE)
  find_library(RATEWARDEN_HIREDIS_ARCHIVE NAMES libhiredis.a HINTS ${HIREDIS_LIBRARY_DIRS})
  if(NOT RATEWARDEN_HIREDIS_ARCHIVE)
    message(FATAL_ERROR " ratewarden: RATEWARDEN_STATIC_DEPS needs libhiredis.a, which was not found in "
                        "${HIREDIS_LIBRARY_DIRS} (Debian's libhiredis-dev has it)")
  endif()
  set_property(TARGET PkgConfig::HIREDIS PROPERTY INTERFACE_LINK_LIBRARIES ${RATEWARDEN_HIREDIS_ARCHIVE})
endif()
find_package(OpenSSL QUIET)
if(NOT OPENSSL_FOUND)
  message(FATAL_ERROR " ratewarden: OpenSSL (libssl) was not found; install it: ${RATEWARDEN_INSTALL_HINT}")
endif()

# libpq, for postgres://: loaded at run time (core/src/postgres/libpq_api.cpp, dlopen of libpq.so.5), never linked,
# so only its header is needed to build, and the binary packages (RATEWARDEN_STATIC_DEPS) have the PostgreSQL store
# too. The tests and benchmarks link libpq themselves (PkgConfig::LIBPQ, when found).
# (RATEWARDEN_POSTGRES, for every directory: capi/ writes it into the installed CMake and pkg-config files.)
pkg_check_modules(LIBPQ QUIET IMPORTED_TARGET libpq)
find_path(RATEWARDEN_LIBPQ_INCLUDE_DIR libpq-fe.h HINTS ${LIBPQ_INCLUDE_DIRS} PATH_SUFFIXES postgresql)
if(RATEWARDEN_LIBPQ_INCLUDE_DIR)
  set(RATEWARDEN_POSTGRES ON CACHE INTERNAL "")
elseif(RATEWARDEN_STATIC_DEPS)
  message(WARNING " ratewarden: libpq-fe.h was not found: this package is built without the PostgreSQL store; "
                  "install libpq's header: ${RATEWARDEN_INSTALL_HINT}")
  set(RATEWARDEN_POSTGRES OFF CACHE INTERNAL "")
else()
  message(FATAL_ERROR " ratewarden: libpq was not found (libpq-fe.h); install it: ${RATEWARDEN_INSTALL_HINT}")
endif()
