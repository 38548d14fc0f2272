// Real redis-server processes for the tests, started by tests/servers/launch.py. The launcher is their parent: it
// SIGKILLs them and removes their directories when its stdin closes, so they die with this process however it ends.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "toxiproxy.hpp"

struct pg_conn;  // libpq's PGconn

namespace ratewarden::testing {

// What a server listens on besides its plain loopback port.
struct ServerOptions {
  bool tls = false;          // a TLS port too: a throwaway CA signs the server's certificate
  bool tls_only = false;     // a TLS port and no plain port
  bool unix_socket = false;  // a Unix socket too
  bool toxiproxy = false;    // a Toxiproxy proxy in front of every node (toxiproxy.hpp)
};

// The certificates of a TLS launch: the CA of the servers' certificates, a client certificate and key it signed, and
// an unrelated CA that must fail to verify the servers.
struct TlsFiles {
  std::string ca, cert, key, wrong_ca;
};

class Launcher;  // one launch.py process

// One redis-server: a RedisServer, or a node of a RedisCluster.
class RedisNode {
 public:
  RedisNode(std::shared_ptr<Launcher> launcher, size_t index);

  int port() const { return port_; }          // 0 when TLS only
  int tls_port() const { return tls_port_; }  // 0 without TLS
  const std::string& unix_path() const { return unix_path_; }
  const std::string& dir() const { return dir_; }  // its working directory, removed with it
  const TlsFiles& tls() const { return tls_; }
  pid_t pid() const { return pid_; }  // -1 while killed
  // The URL forms of each listener; each throws when the server has no such listener.
  std::string url() const;       // redis://127.0.0.1:P
  std::string tls_url() const;   // rediss://127.0.0.1:TP?tls_ca=CA
  std::string unix_url() const;  // redis+unix://PATH
  // With ServerOptions::toxiproxy: the node's proxy (its name in Toxiproxy's API, its port, the URL through it) and
  // the API. Each throws without one.
  const std::string& proxy() const;
  int proxy_port() const;
  std::string proxy_url() const;
  Toxiproxy toxiproxy() const;
  pid_t toxiproxy_pid() const;

  void start();  // after kill(): on the same port(s) and socket; waits until it answers PING
  void kill();   // SIGKILL: the abrupt death of a server
  void stop();   // SIGSTOP: a server that hangs
  void cont();   // SIGCONT
  bool running() const { return pid_ > 0; }

  // An admin command on a fresh connection (plain port, else Unix socket); returns the reply as text (arrays joined
  // by '\n'). Throws on failure.
  std::string command(const std::vector<std::string>& args, const std::string& password = "") const;

 private:
  void control(const std::string& verb);

  std::shared_ptr<Launcher> launcher_;
  size_t index_;
  int port_ = 0, tls_port_ = 0;
  std::string unix_path_, dir_, url_, tls_url_, unix_url_;
  std::string proxy_, proxy_url_;
  int proxy_port_ = 0;
  TlsFiles tls_;
  pid_t pid_ = -1;
};

// One server on free loopback ports in a fresh directory. `args` are extra redis-server arguments, e.g.
// {"--requirepass", "secret"}.
class RedisServer : public RedisNode {
 public:
  explicit RedisServer(std::vector<std::string> args = {}, ServerOptions options = {});
};

// A throwaway PostgreSQL cluster (launch.py --postgres): initdb in a fresh directory, a free loopback port, run as
// the postgres user when the tests run as root. The launcher's node controls apply: kill() SIGKILLs the postmaster
// and every backend, start() restarts it on the same port and data directory, stop() / cont() freeze and thaw them.
class PostgresServer : public RedisNode {
 public:
  explicit PostgresServer(ServerOptions options = {});  // only `toxiproxy` applies
  // postgres://postgres@127.0.0.1:P/postgres, followed by `query` ("?schema=...") when given.
  std::string url(const std::string& query = "") const { return RedisNode::url() + query; }
  std::string proxy_url(const std::string& query = "") const { return RedisNode::proxy_url() + query; }
  // One SQL statement on a fresh connection: the first field of the first row ("" when none). Throws on failure.
  std::string sql(const std::string& statement) const;
};

// One connection to a PostgresServer kept open across statements (a transaction that holds locks while the test
// goes on, e.g.). sql() as PostgresServer::sql, on this connection.
class PostgresSession {
 public:
  explicit PostgresSession(const PostgresServer& server);
  ~PostgresSession();
  PostgresSession(const PostgresSession&) = delete;
  PostgresSession& operator=(const PostgresSession&) = delete;
  std::string sql(const std::string& statement);

 private:
  ::pg_conn* conn_ = nullptr;
};

// A loopback TCP port nobody listens on right now.
int free_port();

// The servers a test process shares: each started on first use, stopped when the process ends (however it ends).
class RedisServer& shared_redis_server();
class RedisCluster& shared_redis_cluster();
class PostgresServer& shared_postgres_server();
class RedisSentinel& shared_redis_sentinel();

// Three masters joined by `redis-cli --cluster create`, every node agreeing on the slot map; stopped on destruction.
class RedisCluster {
 public:
  explicit RedisCluster(ServerOptions options = {});
  std::string url() const;      // redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3
  std::string tls_url() const;  // rediss+cluster://127.0.0.1:TP1,...?tls_ca=CA
  std::string proxy_url() const;  // ServerOptions::toxiproxy: redis+cluster:// through the nodes' proxies
  RedisNode& node(size_t i) { return nodes_[i]; }
  size_t size() const { return nodes_.size(); }
  const TlsFiles& tls() const { return nodes_[0].tls(); }
  // The index of the master serving `key`'s slot, and each master's node id.
  size_t master_of(const std::string& key) const;
  std::string slot_of(const std::string& key) const;  // CLUSTER KEYSLOT
  // Moves the slot of `key` from its master to master `to`, key by key with MIGRATE (with pauses, so that traffic
  // meets the half-migrated slot), as redis-cli --cluster reshard does.
  void migrate_slot_of(const std::string& key, size_t to);
  std::string node_id(size_t i) const;

 private:
  std::shared_ptr<Launcher> launcher_;
  std::vector<RedisNode> nodes_;
  std::string url_, tls_url_, proxy_url_;
};

// A master (node 0), its replica (node 1) and three sentinels (nodes 2-4) monitoring them as service() (launch.py
// --sentinel: about 7 s to start, a failover in a few seconds); stopped on destruction. `tls_only`: every node and
// sentinel on TLS only (then only tls_url() and the store reach them: command() and named_master() need plain ports).
class RedisSentinel {
 public:
  explicit RedisSentinel(bool tls_only = false);
  std::string url() const { return required_url(url_); }          // redis+sentinel://127.0.0.1:S1,.../mymaster
  std::string tls_url() const { return required_url(tls_url_); }  // rediss+sentinel://...:TS1,.../mymaster?tls_ca=CA
  const std::string& service() const { return service_; }
  RedisNode& node(size_t i) { return nodes_[i]; }
  // The data node (0 or 1) the running sentinels name the master now, or -1 while they name none of them or
  // disagree.
  int named_master() const;

 private:
  static std::string required_url(const std::string& url);

  std::shared_ptr<Launcher> launcher_;
  std::vector<RedisNode> nodes_;
  std::string url_, tls_url_, service_;
};

}  // namespace ratewarden::testing
