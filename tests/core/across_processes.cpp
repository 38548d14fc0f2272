#include "across_processes.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

namespace ratewarden::testing {
namespace {

int64_t run_child(const std::string& url, const std::string& policy, Algorithm algorithm, int threads, int hits) {
  LimiterOptions options;
  options.algorithm = algorithm;
  Limiter limiter(policy, open_store(url), options);
  std::atomic<int64_t> allowed{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (int i = 0; i < hits; ++i)
        if (limiter.hit("hot").allowed) allowed.fetch_add(1);
    });
  for (auto& w : workers) w.join();
  return allowed.load();
}

}  // namespace

int64_t allowed_across_processes(const std::string& url, const std::string& policy, Algorithm algorithm,
                                 int processes, int threads, int hits) {
  std::vector<pid_t> children;
  std::vector<int> pipes;
  for (int p = 0; p < processes; ++p) {
    int fds[2];
    if (::pipe(fds) != 0) return -1;
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      int64_t n = -1;
      try {
        n = run_child(url, policy, algorithm, threads, hits);
      } catch (const std::exception&) {
      }
      ssize_t w = ::write(fds[1], &n, sizeof n);
      ::_exit(w == sizeof n && n >= 0 ? 0 : 1);
    }
    ::close(fds[1]);
    children.push_back(pid);
    pipes.push_back(fds[0]);
  }
  int64_t total = 0;
  bool ok = true;
  for (size_t i = 0; i < children.size(); ++i) {
    int64_t n = -1;
    ok = ok && ::read(pipes[i], &n, sizeof n) == static_cast<ssize_t>(sizeof n);
    ::close(pipes[i]);
    int status = 0;
    ::waitpid(children[i], &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    total += n;
  }
  return ok ? total : -1;
}

}  // namespace ratewarden::testing
