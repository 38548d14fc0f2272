// One non-blocking libpq connection in pipeline mode, driven by the I/O loop (internal).
//
// It (re)connects on demand (PQconnectStartParams / PQconnectPoll), checks the schema's version once per store and
// process (and creates or upgrades it when it is missing or older and the store creates it: the set-up, bounded by
// connect_timeout, its time not counted in the waiting calls' timeouts), prepares the statements, then pipelines requests: each request is followed by a sync,
// so it is a transaction of its own (an error or a lock wait in one never touches another) while many are in flight
// on one connection. A server that fails or stays silent past a timeout loses the connection: every request on it
// fails, and the next request connects again. Everything here runs on the loop thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "io/io_loop.hpp"
#include "libpq_api.hpp"
#include "pg_options.hpp"
#include "pg_request.hpp"
#include "schema.hpp"

namespace ratewarden {

// What a store's connections share: set on any thread before the first request, then read on the loop thread.
class CallMetrics;

struct PgShared {
  PgOptions options;
  std::string name;  // describe(): for messages
  std::string setup_sql;
  std::vector<PgStatement> statements;
  std::string version_sql;
  bool schema_ready = false;  // this process found the schema at this library's version (loop thread)
  std::shared_ptr<CallMetrics> metrics;  // the store's figures (its circuit's and connections' too)
  std::atomic<int64_t> sweeps{0};        // passes of the sweep over every block
};

// Told how the server fares: what the circuit breaker counts (pg_client.hpp).
class PgHealth {
 public:
  virtual ~PgHealth() = default;
  virtual void on_server_answer() = 0;
  // The server refused, cut or stopped answering a connection (not an SQL error, not one slow statement).
  virtual void on_server_failure(const std::string& message) = 0;
};

class PgConnection final : public IoHandler, public Flushable {
 public:
  // Throws InvalidArgument when libpq cannot be loaded (libpq_api.hpp).
  PgConnection(IoLoop& loop, PgShared& shared, PgHealth& health)
      : pq_(libpq()), loop_(loop), shared_(shared), health_(health) {}
  ~PgConnection() override;
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  void send(PgRequest* request);
  size_t in_flight() const { return waiting_.size() + queued_.size(); }
  bool opened() const { return state_ != State::closed; }  // connected, or on its way
  int64_t next_deadline_us() const;
  void expire(int64_t now_us);
  // Fails every request and drops the connection.
  void fail_all(ErrorCode code, const std::string& message);

  void on_io(uint32_t events) override;
  void flush() override;

 private:
  // checking, setting_up: the schema step (its time is not counted in the queued calls' timeouts).
  enum class State { closed, connecting, checking, setting_up, ready };
  // What the connection waits for up to one sync: a request's result, or the prepared statements' (request null).
  struct Pending {
    PgRequest* request;  // null: the statements' preparation, or a request that ran out of time
    bool prepare;
    bool after_result = false;  // its result came; the NULL that ends it is next
  };

  void start_connect();
  void continue_connect();
  void start_check();
  void send_schema_query(const std::string& sql, State next);
  void read_check();
  void start_setup();
  void read_setup();
  void end_schema_step();
  bool in_schema_step() const { return state_ == State::checking || state_ == State::setting_up; }
  void enter_pipeline();
  void append(PgRequest* request);
  void read_results();
  void take_result(Pending& pending, PGresult* result);
  void watch(bool want_write);
  void server_failed(ErrorCode code, const std::string& message);  // tells health_, then fail_all
  void drop_connection();
  std::string server_message() const;

  const LibPq& pq_;
  IoLoop& loop_;
  PgShared& shared_;
  PgHealth& health_;
  State state_ = State::closed;
  bool counted_ = false;  // counted in the store's open connections (since it was ready)
  PGconn* conn_ = nullptr;
  int fd_ = -1;
  uint32_t watched_ = 0;  // the epoll events fd_ is watched for
  std::deque<Pending> waiting_;      // sent, in order
  std::deque<PgRequest*> queued_;    // waiting for the connection to be ready
  int64_t connect_deadline_us_ = 0;  // until the statements are prepared
  int64_t silent_since_us_ = 0;      // the deadline of the oldest request that ran out of time unanswered
  int64_t found_version_ = 0;         // the version the check read (0: none)
  std::string setup_error_;
  bool dirty_ = false;
};

}  // namespace ratewarden
