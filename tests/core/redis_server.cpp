#include "redis_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace ratewarden::testing {
namespace {

std::string reply_text(const redisReply* r) {
  switch (r->type) {
    case REDIS_REPLY_INTEGER: return std::to_string(r->integer);
    case REDIS_REPLY_NIL: return "";
    case REDIS_REPLY_ARRAY: {
      std::string out;
      for (size_t i = 0; i < r->elements; ++i) out += (i ? "\n" : "") + reply_text(r->element[i]);
      return out;
    }
    default: return std::string(r->str, r->len);
  }
}

}  // namespace

bool port_is_free(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return free;
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("no free port");
  ::close(fd);
  return ntohs(addr.sin_port);
}

RedisServer::RedisServer(std::vector<std::string> args, bool cluster_node) : args_(std::move(args)) {
  char tmpl[] = "/tmp/ratewarden-redis-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  // Another process may take the free port first: then redis-server exits and we try another.
  for (int attempt = 0;; ++attempt) {
    port_ = free_port();
    // The cluster bus listens on port + 10000: pick ports low enough, with the bus port free too.
    while (cluster_node && (port_ > 55000 || !port_is_free(port_ + 10000))) port_ = 20000 + std::rand() % 30000;
    try {
      start();
      return;
    } catch (const std::runtime_error&) {
      if (attempt == 4) throw;
    }
  }
}

RedisServer::~RedisServer() {
  kill();
  std::system(("rm -rf " + dir_).c_str());
}

void RedisServer::start() {
  std::vector<std::string> argv = {"redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                   "--save", "", "--appendonly", "no", "--dir", dir_, "--enable-debug-command", "yes"};
  argv.insert(argv.end(), args_.begin(), args_.end());
  pid_ = ::fork();
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a crashed test
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::freopen("/dev/null", "w", stdout);
    ::execvp("redis-server", cargv.data());
    ::_exit(127);
  }
  for (int i = 0; i < 500; ++i) {
    redisContext* c = redisConnect("127.0.0.1", port_);
    bool up = c != nullptr && !c->err;
    if (c) redisFree(c);
    if (up) return;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("redis-server exited at start (is it installed? scripts/setup.sh installs it)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("redis-server did not start on port " + std::to_string(port_));
}

void RedisServer::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string RedisServer::command(const std::vector<std::string>& args, const std::string& password) const {
  redisContext* c = redisConnect("127.0.0.1", port_);
  if (c == nullptr || c->err) {
    if (c) redisFree(c);
    throw std::runtime_error("cannot connect to the test redis-server");
  }
  if (!password.empty()) freeReplyObject(redisCommand(c, "AUTH %s", password.c_str()));
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(args.size()), argv.data(), lens.data()));
  if (r == nullptr) {
    redisFree(c);
    throw std::runtime_error("test redis command failed");
  }
  std::string out = reply_text(r);
  const bool error = r->type == REDIS_REPLY_ERROR;
  freeReplyObject(r);
  redisFree(c);
  if (error) throw std::runtime_error("redis: " + out);
  return out;
}

RedisCluster::RedisCluster() {
  const std::vector<std::string> args = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                         "--cluster-node-timeout", "2000",
                                         // The other masters keep serving their slots when one is down.
                                         "--cluster-require-full-coverage", "no"};
  std::string create = "redis-cli --cluster create";
  for (int i = 0; i < 3; ++i) {
    nodes_.push_back(std::make_unique<RedisServer>(args, true));
    create += " 127.0.0.1:" + std::to_string(nodes_.back()->port());
  }
  create += " --cluster-replicas 0 --cluster-yes >/dev/null 2>&1";
  if (std::system(create.c_str()) != 0) throw std::runtime_error("redis-cli --cluster create failed");
  for (int i = 0; i < 1000; ++i) {
    bool ok = true;
    for (auto& n : nodes_) ok = ok && n->command({"CLUSTER", "INFO"}).find("cluster_state:ok") != std::string::npos;
    if (ok) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("the test cluster never reached cluster_state:ok");
}

std::string RedisCluster::url() const {
  std::string hosts;
  for (const auto& n : nodes_) hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(n->port());
  return "redis+cluster://" + hosts;
}

std::string RedisCluster::node_id(size_t i) const { return nodes_[i]->command({"CLUSTER", "MYID"}); }

// Only the master owning the key's slot answers for it; the others reply MOVED (an error).
size_t RedisCluster::master_of(const std::string& key) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i]->running()) continue;
    try {
      nodes_[i]->command({"EXISTS", key});
      return i;
    } catch (const std::runtime_error&) {
    }
  }
  throw std::runtime_error("no running master serves " + key);
}

}  // namespace ratewarden::testing
