// Login protection: at most 5 attempts per username per minute. The 6th attempt is refused with its retry-after.
#include <cstdio>
#include <string>

#include "ratewarden/ratewarden.hpp"

int main() {
  auto store = ratewarden::open_store("memory://");
  ratewarden::Limiter attempts("5/minute", store);

  std::printf("%-8s %-8s %-8s %-10s %s\n", "attempt", "user", "status", "remaining", "retry-after");
  const char* users[] = {"alice", "alice", "alice", "alice", "alice", "alice", "bob"};
  int n = 0;
  for (const char* user : users) {
    ratewarden::Decision d = attempts.hit(std::string("login:") + user);
    // Retry-After in whole seconds, rounded up: waiting that long always succeeds.
    long long retry_s = (d.retry_after_us + 999999) / 1000000;
    std::printf("%-8d %-8s %-8s %-10lld %s\n", ++n, user, d.allowed ? "200" : "429",
                static_cast<long long>(d.remaining), d.allowed ? "-" : (std::to_string(retry_s) + " s").c_str());
  }
  return 0;
}
