#include "reloader.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace ratewarden::server {
namespace {

constexpr int kQuietMs = 100;
constexpr uint32_t kEvents = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB |
                             IN_DELETE_SELF | IN_MOVE_SELF;

}  // namespace

Reloader::Reloader(std::string dir, std::function<void()> reload) : dir_(std::move(dir)), reload_(std::move(reload)) {
  inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (inotify_fd_ < 0 || stop_fd_ < 0) throw std::runtime_error(std::string("inotify: ") + std::strerror(errno));
  watch();
  thread_ = std::thread([this] { run(); });
}

Reloader::~Reloader() {
  const uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof one);
  thread_.join();
  ::close(inotify_fd_);
  ::close(stop_fd_);
}

void Reloader::watch() {
  // Watches are by path: adding one again is harmless. Dot-named directories (Kubernetes' `..<timestamp>`) are
  // written before `..data` is swapped to them, which the directory's own watch sees.
  if (inotify_add_watch(inotify_fd_, dir_.c_str(), kEvents) < 0) return;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(
           dir_, std::filesystem::directory_options::follow_directory_symlink, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_directory(ec)) continue;
    if (it->path().filename().string().rfind('.', 0) == 0) {
      it.disable_recursion_pending();
      continue;
    }
    inotify_add_watch(inotify_fd_, it->path().c_str(), kEvents);
  }
}

void Reloader::run() {
  pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  bool pending = false;
  alignas(inotify_event) char buf[16384];
  while (true) {
    const int n = poll(fds, 2, pending ? kQuietMs : -1);
    if (n < 0 && errno == EINTR) continue;
    if (fds[1].revents & POLLIN) return;
    if (n == 0) {  // quiet for kQuietMs after changes: one reload
      pending = false;
      watch();  // new subdirectories, or the directory itself replaced
      reload_();
      continue;
    }
    while (::read(inotify_fd_, buf, sizeof buf) > 0) pending = true;
  }
}

}  // namespace ratewarden::server
