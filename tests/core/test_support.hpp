// Helpers shared by the core test suites.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "ratewarden/ratewarden.hpp"

namespace ratewarden {

// How GoogleTest prints a decision in a failure.
inline void PrintTo(const Decision& d, std::ostream* os) {
  *os << "{allowed " << d.allowed << ", limit " << d.limit << ", remaining " << d.remaining << ", reset_after "
      << d.reset_after_us << ", retry_after " << d.retry_after_us << ", used " << d.used << ", policy_index "
      << d.policy_index << ", wait " << d.wait_us << ", ticket " << d.ticket << "}";
}

}  // namespace ratewarden

namespace ratewarden::testing {

// A clock that only moves when told to.
class ManualClock {
 public:
  explicit ManualClock(int64_t start_us = 1702080000000000) : now_(std::make_shared<std::atomic<int64_t>>(start_us)) {}
  Clock clock() const {
    auto now = now_;
    return [now] { return now->load(); };
  }
  int64_t now() const { return now_->load(); }
  void set(int64_t us) { now_->store(us); }
  void advance(int64_t us) { now_->fetch_add(us); }

 private:
  std::shared_ptr<std::atomic<int64_t>> now_;
};

inline std::shared_ptr<MemoryStore> memory_store(const ManualClock& clock, int64_t max_keys = 1000000) {
  MemoryStoreOptions options;
  options.clock = clock.clock();
  options.max_keys = max_keys;
  return std::make_shared<MemoryStore>(options);
}

inline LimiterOptions with_algorithm(Algorithm algorithm) {
  LimiterOptions options;
  options.algorithm = algorithm;
  return options;
}

// One hit_many of `distinct` keys (`name` + i), each three times, `distinct` calls apart, on a limiter of 2 per key:
// each key's first two calls allowed and its third denied, in the batch's order, whichever connections carry it.
inline void expect_hit_many_in_order(Limiter& limiter, const std::string& name, int distinct) {
  std::vector<std::string> keys;
  for (int i = 0; i < 3 * distinct; ++i) keys.push_back(name + std::to_string(i % distinct));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  for (int i = 0; i < distinct; ++i) limiter.reset(keys[i]);
  const std::vector<Decision> d = limiter.hit_many(views);
  for (int i = 0; i < 3 * distinct; ++i) EXPECT_EQ(d[i].allowed, i < 2 * distinct) << name << ", call " << i;
}

// What /proc says of this process: the entries of one of its directories (/proc/self/fd: its descriptors;
// /proc/self/task: its threads), and its resident memory in KiB.
inline int proc_entries(const char* dir) {
  int n = 0;
  DIR* d = opendir(dir);
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

inline int64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

}  // namespace ratewarden::testing
