// The docs keep up with the algorithm table: every algorithm has its formulas, its Redis layout, its line in the
// README's table and its name in the bindings' option lists (docs/architecture.md, "Adding an algorithm").
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

std::string read(const std::string& relative_path) {
  std::ifstream in(std::string(RATEWARDEN_SOURCE_DIR) + "/" + relative_path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Docs, NameEveryAlgorithm) {
  struct Place {
    const char* file;
    std::string (*pattern)(const std::string& name);
  };
  const Place places[] = {
      {"docs/algorithms.md", [](const std::string& name) { return "\n## " + name + "\n"; }},
      {"docs/key-format.md", [](const std::string& name) { return "\n| `" + name + "` |"; }},
      {"README.md", [](const std::string& name) { return "\n| `" + name + "` |"; }},
      {"docs/python.md", [](const std::string& name) { return "`" + name + "`"; }},
      {"docs/node.md", [](const std::string& name) { return "`" + name + "`"; }},
      {"capi/include/ratewarden.h", [](const std::string& name) { return "\"" + name + "\""; }},
  };
  for (const Place& place : places) {
    const std::string text = read(place.file);
    ASSERT_FALSE(text.empty()) << place.file;
    for (const AlgorithmInfo& a : kAlgorithms)
      EXPECT_NE(text.find(place.pattern(std::string(a.name))), std::string::npos) << place.file << " lacks " << a.name;
  }
}

}  // namespace
}  // namespace ratewarden::testing
