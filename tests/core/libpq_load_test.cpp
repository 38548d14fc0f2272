// The PostgreSQL store loads libpq.so.5 at run time, once per process (core/src/postgres/libpq_api.hpp). This binary
// does not link libpq, and ctest runs each test in a process of its own (tests/core/CMakeLists.txt): the first open
// decides what is loaded.
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "ratewarden/errors.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden {
namespace {

// Nobody listens on port 1: a check fails with a StoreError, after libpq has been called.
constexpr const char* kUrl = "postgres://alice:s3cret@127.0.0.1:1/db?timeout=200ms&connect_timeout=200ms";

std::string open_error() {
  try {
    open_store(kUrl);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "the store opened";
  return "";
}

void expect_clear(const std::string& message, const std::string& why) {
  for (const char* part : {"libpq.so.5", "libpq5", "RATEWARDEN_LIBPQ", "127.0.0.1:1"})
    EXPECT_NE(message.find(part), std::string::npos) << part << " not in: " << message;
  EXPECT_NE(message.find(why), std::string::npos) << why << " not in: " << message;
  EXPECT_EQ(message.find("s3cret"), std::string::npos) << message;
}

TEST(LibpqLoading, MissingLibraryIsAnErrorAtOpen) {
  ASSERT_EQ(setenv("RATEWARDEN_LIBPQ", "/nonexistent/libpq.so.5", 1), 0);
  const std::string first = open_error();
  expect_clear(first, "could not be loaded from \"/nonexistent/libpq.so.5\"");
  EXPECT_EQ(open_error(), first);  // loaded once: the same answer every time
  EXPECT_NO_THROW(open_store("memory://"));  // the other stores are untouched
}

TEST(LibpqLoading, LibraryWithoutLibpqsFunctionsIsAnErrorAtOpen) {
  ASSERT_EQ(setenv("RATEWARDEN_LIBPQ", "libc.so.6", 1), 0);
  expect_clear(open_error(), "\"libc.so.6\" has no PQ");
}

TEST(LibpqLoading, LoadsLibpqSo5AndCallsIt) {
  ASSERT_EQ(unsetenv("RATEWARDEN_LIBPQ"), 0);
  auto store = open_store(kUrl);
  try {
    store->check();
    ADD_FAILURE() << "nobody listens on port 1";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot connect"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ratewarden
