// The PostgreSQL store (internal; opened by URL: pg_url.hpp). Every call is one statement — the schema's
// <table>_decide function, which decides all the call's policies in one transaction on the server — pipelined on
// a small pool of non-blocking connections that the library's I/O thread drives (docs/deployment.md, "PostgreSQL").
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "io/io_loop.hpp"
#include "pg_client.hpp"
#include "pg_options.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden {

class PostgresStore final : public Store {
 public:
  explicit PostgresStore(PgOptions options);
  ~PostgresStore() override;

  void decide_async(const StoreCall& call, DecisionCallback done) override;
  void decide_many_async(const StoreCall* calls, size_t n, DecisionsCallback done) override;
  void reset_async(const std::string* keys, size_t count, std::string_view tag, DoneCallback done) override;
  void read_resets_async(int64_t cursor, ResetLogCallback done) override;
  void check_async(DoneCallback done) override;
  void close() override;
  StoreTraits traits() const override { return StoreTraits::network(); }
  std::string describe() const override { return shared_->name; }

 private:
  // This process's client: made on first use, and again in a forked child (which never touches the parent's).
  struct Generation {
    uint64_t fork_generation;
    IoLoop* loop;
    PgClient* client;
  };
  Generation* current();
  void submit(PgRequest* request);
  void submit(std::vector<PgRequest*> batch);  // routed together, in order
  PgRequest* decision_request(const StoreCall& call, const std::string& now) const;

  std::shared_ptr<PgShared> shared_;
  std::atomic<Generation*> current_{nullptr};
  std::atomic<bool> closed_{false};
};

}  // namespace ratewarden
