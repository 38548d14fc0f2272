// The shared conformance vectors against the memory store.
#include <set>

#include "conformance.hpp"
#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

class Conformance : public ::testing::TestWithParam<size_t> {};

TEST_P(Conformance, MemoryStore) {
  ManualClock clock;
  auto store = memory_store(clock);
  run_conformance_case(GetParam(), store, [&](int64_t now) { clock.set(now); });
}

INSTANTIATE_TEST_SUITE_P(Vectors, Conformance, ::testing::ValuesIn(conformance_cases()), conformance_case_name);

TEST(ConformanceFile, CoversEveryAlgorithm) {
  std::set<std::string> seen;
  for (const auto& c : conformance_vectors().at("cases")) seen.insert(c.at("algorithm").get<std::string>());
  const std::vector<std::string> names = algorithm_names();
  EXPECT_EQ(seen, std::set<std::string>(names.begin(), names.end()));
}

}  // namespace
}  // namespace ratewarden::testing
