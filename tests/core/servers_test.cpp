// The test servers (tests/servers/launch.py) through RedisServer and RedisCluster: each listener they report answers,
// and no server outlives its test process, however that process ends.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "redis_server.hpp"

namespace ratewarden::testing {
namespace {

// A shell command's stdout and exit status.
std::pair<std::string, int> shell(const std::string& command) {
  FILE* out = ::popen((command + " 2>/dev/null").c_str(), "r");
  std::string text;
  char chunk[4096];
  for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, out)) > 0;) text.append(chunk, n);
  return {text, ::pclose(out)};
}

// The state letter of /proc/PID/stat ('R', 'S', 'T' stopped, 'Z' zombie), or 0 when the pid does not exist.
char state_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line) || line.rfind(')') == std::string::npos) return 0;
  return line[line.rfind(')') + 2];
}

// A zombie is dead: nothing may reap orphans here (a container's init often does not).
bool alive(pid_t pid) { return state_of(pid) != 0 && state_of(pid) != 'Z'; }

ServerOptions listeners(bool tls, bool tls_only, bool unix_socket) {
  ServerOptions options;
  options.tls = tls;
  options.tls_only = tls_only;
  options.unix_socket = unix_socket;
  return options;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string tls_cli(const TlsFiles& tls, const std::string& ca, int port, const std::string& args) {
  return "redis-cli --tls --cacert " + ca + " --cert " + tls.cert + " --key " + tls.key + " -p " +
         std::to_string(port) + " " + args;
}

TEST(TestServers, TlsAndUnixListenersAnswer) {
  RedisServer server({"--requirepass", "pw"}, listeners(true, false, true));
  const TlsFiles& tls = server.tls();
  EXPECT_EQ(server.url(), "redis://127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(server.tls_url(), "rediss://127.0.0.1:" + std::to_string(server.tls_port()) + "?tls_ca=" + tls.ca);
  EXPECT_EQ(server.unix_url(), "redis+unix://" + server.unix_path());
  EXPECT_EQ(shell(tls_cli(tls, tls.ca, server.tls_port(), "-a pw ping")).first, "PONG\n");
  EXPECT_NE(shell(tls_cli(tls, tls.wrong_ca, server.tls_port(), "-a pw ping")).second, 0);
  EXPECT_EQ(shell("redis-cli -a pw -s " + server.unix_path() + " ping").first, "PONG\n");
  EXPECT_EQ(server.command({"PING"}, "pw"), "PONG");
}

TEST(TestServers, TlsOnlyHasNoPlainPort) {
  RedisServer server({}, listeners(false, true, true));
  EXPECT_EQ(server.port(), 0);
  EXPECT_THROW(server.url(), std::logic_error);
  EXPECT_EQ(shell("openssl s_client -brief -connect 127.0.0.1:" + std::to_string(server.tls_port()) + " -CAfile " +
                  server.tls().ca + " -verify_return_error </dev/null >/dev/null")
                .second,
            0);
  EXPECT_EQ(server.command({"PING"}), "PONG");  // through the Unix socket
}

TEST(TestServers, StopContKillAndStart) {
  RedisServer server;
  const pid_t first = server.pid();
  server.stop();
  EXPECT_EQ(state_of(first), 'T');
  server.cont();
  EXPECT_NE(state_of(first), 'T');
  EXPECT_EQ(server.command({"PING"}), "PONG");
  server.kill();
  EXPECT_FALSE(server.running());
  EXPECT_FALSE(alive(first));
  const int port = server.port();
  server.start();
  EXPECT_TRUE(alive(server.pid()));
  EXPECT_EQ(server.port(), port);
  EXPECT_EQ(server.command({"PING"}), "PONG");
}

// Toxiproxy in front of a server: the proxy forwards, and a disabled proxy cuts the path until it is reset.
TEST(TestServers, ToxiproxyForwardsUntilDisabled) {
  ServerOptions options;
  options.toxiproxy = true;
  RedisServer server({}, options);
  const std::string ping = "redis-cli -p " + std::to_string(server.proxy_port()) + " ping";
  EXPECT_EQ(shell(ping).first, "PONG\n");
  server.toxiproxy().enable(server.proxy(), false);
  EXPECT_NE(shell(ping).first, "PONG\n");
  server.toxiproxy().reset();
  EXPECT_EQ(shell(ping).first, "PONG\n");
  EXPECT_EQ(server.proxy_url(), "redis://127.0.0.1:" + std::to_string(server.proxy_port()));
}

TEST(TestServers, TlsClusterReportsTlsPortsOverTls) {
  RedisCluster cluster(listeners(true, false, false));
  std::string tls_hosts, plain_hosts;
  for (size_t i = 0; i < cluster.size(); ++i) {
    tls_hosts += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(cluster.node(i).tls_port());
    plain_hosts += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(cluster.node(i).port());
  }
  EXPECT_EQ(cluster.tls_url(), "rediss+cluster://" + tls_hosts + "?tls_ca=" + cluster.tls().ca);
  EXPECT_EQ(cluster.url(), "redis+cluster://" + plain_hosts);
  const std::string over_tls = shell(tls_cli(cluster.tls(), cluster.tls().ca, cluster.node(0).tls_port(),
                                             "cluster slots")).first;
  const std::string over_plain = cluster.node(0).command({"CLUSTER", "SLOTS"});
  for (size_t i = 0; i < cluster.size(); ++i) {
    EXPECT_NE(over_tls.find("\n" + std::to_string(cluster.node(i).tls_port()) + "\n"), std::string::npos) << over_tls;
    EXPECT_NE(over_plain.find("\n" + std::to_string(cluster.node(i).port()) + "\n"), std::string::npos);
  }
}

// launch.py --sentinel: the sentinels name node 0 the master and know its replica; a sentinel restarted by index
// comes back on its port; and when the set goes, every process and directory goes with it.
TEST(TestServers, SentinelSetAnswersRestartsAndLeavesNothing) {
  std::vector<std::pair<pid_t, std::string>> started;
  {
    RedisSentinel set;
    EXPECT_EQ(set.named_master(), 0);
    EXPECT_NE(set.node(2).command({"SENTINEL", "replicas", set.service()}).find(std::to_string(set.node(1).port())),
              std::string::npos);
    set.node(3).kill();
    set.node(3).start();
    EXPECT_EQ(set.node(3).command({"PING"}), "PONG");
    EXPECT_EQ(set.url().rfind("redis+sentinel://127.0.0.1:" + std::to_string(set.node(2).port()) + ",", 0), 0u);
    for (size_t i = 0; i < 5; ++i) started.emplace_back(set.node(i).pid(), set.node(i).dir());
  }
  for (const auto& [pid, dir] : started) {
    EXPECT_FALSE(alive(pid)) << "redis-server " << pid << " outlived its set";
    EXPECT_FALSE(exists(dir)) << dir << " outlived its set";
  }
}

// A child process starts a server and a cluster (never destroyed), reports their pids and directories, and ends:
// killed, aborted or exiting. Every server must then die and every directory go.
enum class End { sigkill, abort, exit };

class NoServerOutlives : public ::testing::TestWithParam<End> {};

[[noreturn]] void start_servers_and_end(int report, End end) {
  try {
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    // Never destroyed (but reachable: LeakSanitizer stays quiet at exit): only the end of the process ends them.
    ServerOptions proxied = listeners(true, false, true);
    proxied.toxiproxy = true;
    static auto* server = new RedisServer({}, proxied);
    static auto* cluster = new RedisCluster(listeners(false, false, true));
    std::ostringstream out;
    out << server->pid() << ' ' << server->dir() << '\n';
    out << server->toxiproxy_pid() << ' ' << server->dir() << '\n';
    for (size_t i = 0; i < cluster->size(); ++i) out << cluster->node(i).pid() << ' ' << cluster->node(i).dir() << '\n';
    const std::string text = out.str();
    if (::write(report, text.data(), text.size()) != static_cast<ssize_t>(text.size())) ::_exit(3);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    ::_exit(2);
  }
  switch (end) {
    case End::sigkill: ::raise(SIGKILL); break;
    case End::abort: std::abort();
    case End::exit: std::exit(0);
  }
  ::_exit(4);
}

TEST_P(NoServerOutlives, ItsTestProcess) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    start_servers_and_end(fds[1], GetParam());
  }
  ::close(fds[1]);
  std::string report;
  char chunk[4096];
  for (ssize_t n; (n = ::read(fds[0], chunk, sizeof chunk)) > 0;) report.append(chunk, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  switch (GetParam()) {
    case End::sigkill: EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status; break;
    case End::abort: EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) << status; break;
    case End::exit: EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status; break;
  }

  std::vector<std::pair<pid_t, std::string>> servers;
  std::istringstream lines(report);
  for (std::pair<pid_t, std::string> s; lines >> s.first >> s.second;) servers.push_back(s);
  ASSERT_EQ(servers.size(), 5u) << report;  // the server, its Toxiproxy, the cluster's three
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (const auto& [pid, dir] : servers) {
    while ((alive(pid) || exists(dir)) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(alive(pid)) << "server " << pid << " outlived its test process";
    EXPECT_FALSE(exists(dir)) << dir << " outlived its test process";
  }
}

INSTANTIATE_TEST_SUITE_P(Ends, NoServerOutlives, ::testing::Values(End::sigkill, End::abort, End::exit),
                         [](const auto& info) {
                           return std::string(info.param == End::sigkill ? "Killed"
                                              : info.param == End::abort ? "Aborted"
                                                                         : "Exited");
                         });

}  // namespace
}  // namespace ratewarden::testing
