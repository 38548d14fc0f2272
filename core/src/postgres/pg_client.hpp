// The I/O-thread side of a PostgreSQL store: its pool of connections, the timeouts, the circuit breaker and the
// background sweep (internal). Made on any thread, used and destroyed on the I/O thread.
//
// The circuit is the Redis node's (net/circuit.hpp): here the connections that fail for want of the server count
// (refused, cut, silent past a timeout, no connection within connect_timeout: not an SQL error or a cancelled
// statement), and the probe after the back-off ends with the server's next answer or connection failure.
#pragma once

#include <memory>
#include <vector>

#include "io/io_loop.hpp"
#include "net/circuit.hpp"
#include "net/pool.hpp"
#include "pg_connection.hpp"

namespace ratewarden {

class PgClient final : public Deadlines, public PgHealth {
 public:
  PgClient(IoLoop& loop, std::shared_ptr<PgShared> shared);
  ~PgClient() override;

  // On the least busy connection (a batch's calls on one); after close(), fails at once.
  void route(PgRequest* request);
  // Fails what is in flight, closes the connections, stops the sweep.
  void close();

  int64_t next_deadline_us() const override;
  void expire(int64_t now_us) override;
  void on_server_answer() override { circuit_.answered(); }
  void on_server_failure(const std::string& message) override;

 private:
  void schedule_sweep(int64_t delay_us);
  void sweep();

  IoLoop& loop_;
  std::shared_ptr<PgShared> shared_;
  Pool<PgConnection, true> pool_;  // opened on demand
  bool watched_ = false;
  bool closed_ = false;
  bool sweep_scheduled_ = false;
  int64_t sweep_block_ = 0;
  Circuit circuit_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for timers that outlive this
};

}  // namespace ratewarden
