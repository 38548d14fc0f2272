// The PostgreSQL store (internal; opened by URL: pg_url.hpp). Every call is one statement — the schema's
// <table>_decide function, which decides all the call's policies in one transaction on the server — pipelined on
// a small pool of non-blocking connections that the library's I/O thread drives (docs/deployment.md, "PostgreSQL").
#pragma once

#include <memory>
#include <string>

#include "io/io_loop.hpp"
#include "net/client_holder.hpp"
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
  StoreStats stats() const override;
  std::string describe() const override { return shared_->name; }

 private:
  // A new request of `statement`, due within the store's timeout from now.
  PgRequest* request(const char* statement) const;
  PgRequest* decision_request(const StoreCall& call, const std::string& now) const;

  std::shared_ptr<PgShared> shared_;
  // This process's client (a batch's requests are routed together, in order).
  ClientHolder<PgClient, PgRequest> holder_;
};

}  // namespace ratewarden
