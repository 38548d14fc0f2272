// The I/O-thread side of a PostgreSQL store: its pool of connections, the timeouts and the background sweep
// (internal). Made on any thread, used and destroyed on the I/O thread.
#pragma once

#include <memory>
#include <vector>

#include "io/io_loop.hpp"
#include "pg_connection.hpp"

namespace ratewarden {

class PgClient final : public Deadlines {
 public:
  PgClient(IoLoop& loop, std::shared_ptr<PgShared> shared);
  ~PgClient() override;

  // On the least busy connection; after close(), fails at once.
  void route(PgRequest* request);
  // Fails what is in flight, closes the connections, stops the sweep.
  void close();

  int64_t next_deadline_us() const override;
  void expire(int64_t now_us) override;

 private:
  void schedule_sweep(int64_t delay_us);
  void sweep();

  IoLoop& loop_;
  std::shared_ptr<PgShared> shared_;
  std::vector<std::unique_ptr<PgConnection>> connections_;
  size_t next_ = 0;
  bool watched_ = false;
  bool closed_ = false;
  bool sweep_scheduled_ = false;
  int64_t sweep_block_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for timers that outlive this
};

}  // namespace ratewarden
