#include "redis_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <hiredis/hiredis.h>
#include <libpq-fe.h>
#include <nlohmann/json.hpp>

extern char** environ;

namespace ratewarden::testing {

using nlohmann::json;

// One launch.py process, talked to over a socket pair that is its stdin and stdout: when our end closes (this object
// dies, or this process does) it kills its servers and removes their directories.
class Launcher {
 public:
  explicit Launcher(const std::vector<std::string>& flags) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) throw std::runtime_error("socketpair failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    std::vector<std::string> argv = {"python3", RATEWARDEN_LAUNCHER};
    argv.insert(argv.end(), flags.begin(), flags.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    const int spawned = ::posix_spawnp(&pid_, "python3", &actions, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    fd_ = fds[0];
    if (spawned != 0) {
      ::close(fd_);
      throw std::runtime_error("cannot run python3 " RATEWARDEN_LAUNCHER);
    }
    try {
      ready_ = receive();
    } catch (...) {
      finish();
      throw;
    }
    if (!ready_.value("ok", false)) {
      finish();
      throw std::runtime_error("launch.py: " + ready_.value("error", std::string("failed")));
    }
  }
  ~Launcher() { finish(); }
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  const json& ready() const { return ready_; }

  // One command line ("kill 0"); returns its reply, throws unless it is ok.
  json send(const std::string& command) {
    const std::string line = command + "\n";
    // MSG_NOSIGNAL: a launcher that died is an error here, never a SIGPIPE.
    if (::send(fd_, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size()))
      throw std::runtime_error("launch.py is gone");
    json reply = receive();
    if (!reply.value("ok", false)) throw std::runtime_error("launch.py " + command + ": " + reply.value("error", ""));
    return reply;
  }

 private:
  json receive() {
    size_t end;
    while ((end = buffer_.find('\n')) == std::string::npos) {
      char chunk[4096];
      const ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error("launch.py exited (see its error above)");
      buffer_.append(chunk, static_cast<size_t>(n));
    }
    json reply = json::parse(buffer_.substr(0, end));
    buffer_.erase(0, end + 1);
    return reply;
  }

  // End of its stdin: it kills the servers and removes their directories, then exits.
  void finish() {
    ::close(fd_);
    ::waitpid(pid_, nullptr, 0);
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buffer_;
  json ready_;
};

namespace {

std::string text(const json& v) { return v.is_null() ? std::string() : v.get<std::string>(); }

const std::string& required(const std::string& value, const char* listener) {
  if (value.empty()) throw std::logic_error(std::string("this test server has no ") + listener);
  return value;
}

// launch.py's command line: its flags, then the redis-server arguments after "--".
std::vector<std::string> launch_flags(const ServerOptions& options, const std::vector<std::string>& redis_args = {}) {
  std::vector<std::string> flags;
  if (options.tls_only) flags.push_back("--tls-only");
  else if (options.tls) flags.push_back("--tls");
  if (options.unix_socket) flags.push_back("--unix");
  if (options.toxiproxy) flags.push_back("--toxiproxy");
  if (!redis_args.empty()) flags.push_back("--");
  flags.insert(flags.end(), redis_args.begin(), redis_args.end());
  return flags;
}

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

RedisNode::RedisNode(std::shared_ptr<Launcher> launcher, size_t index)
    : launcher_(std::move(launcher)), index_(index) {
  const json& node = launcher_->ready()["nodes"][index];
  port_ = node["port"].is_null() ? 0 : node["port"].get<int>();
  tls_port_ = node["tls_port"].is_null() ? 0 : node["tls_port"].get<int>();
  unix_path_ = text(node["unix"]);
  dir_ = text(node["dir"]);
  url_ = text(node["url"]);
  tls_url_ = text(node["tls_url"]);
  unix_url_ = text(node["unix_url"]);
  pid_ = node["pid"].get<pid_t>();
  if (node.contains("proxy") && !node["proxy"].is_null()) {
    proxy_ = text(node["proxy"]);
    proxy_port_ = node["proxy_port"].get<int>();
    proxy_url_ = text(node["proxy_url"]);
  }
  if (const json& tls = launcher_->ready()["tls"]; !tls.is_null())
    tls_ = {text(tls["ca"]), text(tls["cert"]), text(tls["key"]), text(tls["wrong_ca"])};
}

std::string RedisNode::url() const { return required(url_, "plain port"); }
std::string RedisNode::tls_url() const { return required(tls_url_, "TLS port"); }
std::string RedisNode::unix_url() const { return required(unix_url_, "Unix socket"); }
const std::string& RedisNode::proxy() const { return required(proxy_, "Toxiproxy proxy"); }
int RedisNode::proxy_port() const {
  required(proxy_, "Toxiproxy proxy");
  return proxy_port_;
}
std::string RedisNode::proxy_url() const { return required(proxy_url_, "Toxiproxy proxy"); }
Toxiproxy RedisNode::toxiproxy() const {
  required(proxy_, "Toxiproxy proxy");
  return Toxiproxy(launcher_->ready()["toxiproxy"]["api_port"].get<int>());
}
pid_t RedisNode::toxiproxy_pid() const {
  required(proxy_, "Toxiproxy proxy");
  return launcher_->ready()["toxiproxy"]["pid"].get<pid_t>();
}

void RedisNode::control(const std::string& verb) {
  const json reply = launcher_->send(verb + " " + std::to_string(index_));
  pid_ = reply["pid"].is_null() ? -1 : reply["pid"].get<pid_t>();
}

void RedisNode::start() { control("start"); }
void RedisNode::kill() { control("kill"); }
void RedisNode::stop() { control("stop"); }
void RedisNode::cont() { control("cont"); }

std::string RedisNode::command(const std::vector<std::string>& args, const std::string& password) const {
  redisContext* c = port_ ? redisConnect("127.0.0.1", port_)
                          : redisConnectUnix(required(unix_path_, "plain port or Unix socket").c_str());
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

RedisServer::RedisServer(std::vector<std::string> args, ServerOptions options)
    : RedisNode(std::make_shared<Launcher>(launch_flags(options, args)), 0) {}

namespace {

std::vector<std::string> postgres_flags(const ServerOptions& options) {
  std::vector<std::string> flags = {"--postgres"};
  if (options.toxiproxy) flags.push_back("--toxiproxy");
  return flags;
}

}  // namespace

PostgresServer::PostgresServer(ServerOptions options) : RedisNode(std::make_shared<Launcher>(postgres_flags(options)), 0) {}

namespace {

PGconn* connect_postgres(int port) {
  const std::string conninfo = "host=127.0.0.1 user=postgres dbname=postgres port=" + std::to_string(port);
  PGconn* c = PQconnectdb(conninfo.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    const std::string why = PQerrorMessage(c);
    PQfinish(c);
    throw std::runtime_error("cannot connect to the test PostgreSQL: " + why);
  }
  return c;
}

std::string run_sql(PGconn* c, const std::string& statement) {
  PGresult* r = PQexec(c, statement.c_str());
  const ExecStatusType status = PQresultStatus(r);
  std::string out;
  if (status == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
  const std::string error = PQresultErrorMessage(r);
  PQclear(r);
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) throw std::runtime_error("postgres: " + error);
  return out;
}

}  // namespace

std::string PostgresServer::sql(const std::string& statement) const {
  PGconn* c = connect_postgres(port());
  try {
    std::string out = run_sql(c, statement);
    PQfinish(c);
    return out;
  } catch (...) {
    PQfinish(c);
    throw;
  }
}

PostgresSession::PostgresSession(const PostgresServer& server) : conn_(connect_postgres(server.port())) {}

PostgresSession::~PostgresSession() { PQfinish(conn_); }

std::string PostgresSession::sql(const std::string& statement) { return run_sql(conn_, statement); }

RedisCluster::RedisCluster(ServerOptions options) {
  std::vector<std::string> flags = launch_flags(options);
  flags.insert(flags.end(), {"--cluster", "3"});
  launcher_ = std::make_shared<Launcher>(flags);
  for (size_t i = 0; i < 3; ++i) nodes_.emplace_back(launcher_, i);
  url_ = text(launcher_->ready()["cluster"]["url"]);
  tls_url_ = text(launcher_->ready()["cluster"]["tls_url"]);
  proxy_url_ = text(launcher_->ready()["cluster"]["proxy_url"]);
}

std::string RedisCluster::url() const { return required(url_, "plain ports"); }
std::string RedisCluster::tls_url() const { return required(tls_url_, "TLS ports"); }
std::string RedisCluster::proxy_url() const { return required(proxy_url_, "Toxiproxy proxies"); }

std::string RedisCluster::node_id(size_t i) const { return nodes_[i].command({"CLUSTER", "MYID"}); }

// Only the master owning the key's slot answers for it; the others reply MOVED (an error).
size_t RedisCluster::master_of(const std::string& key) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].running()) continue;
    try {
      nodes_[i].command({"EXISTS", key});
      return i;
    } catch (const std::runtime_error&) {
    }
  }
  throw std::runtime_error("no running master serves " + key);
}

std::string RedisCluster::slot_of(const std::string& key) const { return nodes_[0].command({"CLUSTER", "KEYSLOT", key}); }

void RedisCluster::migrate_slot_of(const std::string& key, size_t to) {
  const size_t from = master_of(key);
  const std::string slot = slot_of(key), from_id = node_id(from), to_id = node_id(to);
  nodes_[to].command({"CLUSTER", "SETSLOT", slot, "IMPORTING", from_id});
  nodes_[from].command({"CLUSTER", "SETSLOT", slot, "MIGRATING", to_id});
  while (true) {
    std::string keys = nodes_[from].command({"CLUSTER", "GETKEYSINSLOT", slot, "100"});
    if (keys.empty()) break;
    std::vector<std::string> cmd = {"MIGRATE", "127.0.0.1", std::to_string(nodes_[to].port()), "", "0", "5000", "KEYS"};
    std::istringstream lines(keys);
    for (std::string k; std::getline(lines, k);) cmd.push_back(k);
    nodes_[from].command(cmd);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (auto& node : nodes_) node.command({"CLUSTER", "SETSLOT", slot, "NODE", to_id});
}

RedisSentinel::RedisSentinel(bool tls_only)
    : launcher_(std::make_shared<Launcher>(tls_only ? std::vector<std::string>{"--sentinel", "--tls-only"}
                                                    : std::vector<std::string>{"--sentinel"})) {
  for (size_t i = 0; i < 5; ++i) nodes_.emplace_back(launcher_, i);
  url_ = text(launcher_->ready()["sentinel"]["url"]);
  tls_url_ = text(launcher_->ready()["sentinel"]["tls_url"]);
  service_ = text(launcher_->ready()["sentinel"]["service"]);
}

std::string RedisSentinel::required_url(const std::string& url) { return required(url, "such listeners"); }

int RedisSentinel::named_master() const {
  int named = -1;
  for (size_t s = 2; s < nodes_.size(); ++s) {
    if (!nodes_[s].running()) continue;
    std::string address;
    try {
      address = nodes_[s].command({"SENTINEL", "get-master-addr-by-name", service_});
    } catch (const std::runtime_error&) {
      continue;
    }
    int found = -1;
    for (int i = 0; i < 2; ++i)
      if (address == "127.0.0.1\n" + std::to_string(nodes_[static_cast<size_t>(i)].port())) found = i;
    if (found < 0 || (named >= 0 && found != named)) return -1;
    named = found;
  }
  return named;
}

RedisServer& shared_redis_server() {
  static RedisServer server;
  return server;
}

RedisCluster& shared_redis_cluster() {
  static RedisCluster cluster;
  return cluster;
}

RedisSentinel& shared_redis_sentinel() {
  static RedisSentinel sentinel;
  return sentinel;
}

PostgresServer& shared_postgres_server() {
  static PostgresServer server;
  return server;
}

}  // namespace ratewarden::testing
