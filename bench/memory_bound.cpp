// Resident memory under a flood of distinct keys: 5M keys into a store bounded to max_keys = 100000.
// The resident size after the first 100000 keys is the reference; it must stay flat after that.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include "ratewarden/ratewarden.hpp"

namespace {

double resident_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

}  // namespace

int main() {
  constexpr int64_t kMaxKeys = 100000;
  constexpr int64_t kFlood = 5000000;
  auto store = std::make_shared<ratewarden::MemoryStore>(ratewarden::MemoryStoreOptions{kMaxKeys, 0, {}});
  ratewarden::Limiter limiter("5/minute", store);

  std::printf("%12s %12s %14s\n", "keys sent", "entries", "resident MiB");
  double reference = 0;
  double peak = 0;
  for (int64_t i = 1; i <= kFlood; ++i) {
    limiter.hit("flood:" + std::to_string(i));
    if (i == kMaxKeys) reference = resident_mib();
    if (i >= kMaxKeys && i % 100000 == 0) peak = std::max(peak, resident_mib());
    if (i == kMaxKeys || i % 500000 == 0)
      std::printf("%12lld %12lld %14.1f\n", static_cast<long long>(i), static_cast<long long>(store->size()),
                  resident_mib());
  }
  std::printf("\nresident after %lld keys: %.1f MiB; peak after %lld keys: %.1f MiB (%.2fx)\n",
              static_cast<long long>(kMaxKeys), reference, static_cast<long long>(kFlood), peak, peak / reference);
  return store->size() <= kMaxKeys ? 0 : 1;
}
