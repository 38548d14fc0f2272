// Reloads the configuration when its directory changes (internal): inotify on the directory and its subdirectories.
// An edited file, a file renamed into place, Kubernetes' ConfigMap update (a new `..<timestamp>` directory, then
// the `..data` symlink renamed over the old one) each fire; a burst of changes is one reload, 100 ms after the last.
#pragma once

#include <functional>
#include <string>
#include <thread>

namespace ratewarden::server {

class Reloader {
 public:
  // Throws std::runtime_error when the directory cannot be watched.
  Reloader(std::string dir, std::function<void()> reload);
  ~Reloader();  // stops watching
  Reloader(const Reloader&) = delete;
  Reloader& operator=(const Reloader&) = delete;

 private:
  void run();
  void watch();  // (re)adds the watches of the directory and its subdirectories

  const std::string dir_;
  const std::function<void()> reload_;
  int inotify_fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
};

}  // namespace ratewarden::server
