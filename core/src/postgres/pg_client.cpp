#include "pg_client.hpp"

#include <algorithm>
#include <climits>

#include "net/network_url.hpp"
#include "ratewarden/clock.hpp"

namespace ratewarden {

PgClient::PgClient(IoLoop& loop, std::shared_ptr<PgShared> shared)
    : loop_(loop),
      shared_(std::move(shared)),
      circuit_(circuit_of(shared_->options, shared_->metrics, shared_->name)) {
  for (int i = 0; i < shared_->options.pool; ++i)
    pool_.add(std::make_unique<PgConnection>(loop_, *shared_, *this));
}

PgClient::~PgClient() {
  *alive_ = false;
  if (watched_) loop_.remove_deadlines(this);
}

void PgClient::route(PgRequest* request) {
  if (closed_) {
    request->fail(ErrorCode::store_unavailable, shared_->name + ": the store was closed");
    return finish_request(request);
  }
  if (!watched_) {  // here, on the I/O thread: a client may be made on any thread
    watched_ = true;
    loop_.add_deadlines(this);
    if (shared_->options.sweep_us > 0) schedule_sweep(shared_->options.sweep_us);
  }
  if (request->deadline_us <= loop_.now_us()) {
    request->fail(ErrorCode::store_timeout, shared_->name + ": no reply within the timeout");
    return finish_request(request);
  }
  bool probe = false;
  if (!circuit_.lets_through(loop_.now_us(), probe)) {
    request->fail(ErrorCode::store_unavailable, shared_->name + ": " + circuit_.refusal(loop_.now_us()));
    return finish_request(request);
  }
  pool_.pick(request->batch).send(request);  // opened on demand: one connection for a caller alone
}

void PgClient::on_server_failure(const std::string& message) {
  if (!closed_) circuit_.failed(loop_.now_us(), circuit_.probing(), message);
}

void PgClient::close() {
  closed_ = true;
  pool_.fail_all(ErrorCode::store_unavailable, shared_->name + ": the store was closed");
}

int64_t PgClient::next_deadline_us() const { return pool_.next_deadline_us(); }

void PgClient::expire(int64_t now) { pool_.expire(now); }

void PgClient::schedule_sweep(int64_t delay_us) {
  if (sweep_scheduled_ || closed_) return;
  sweep_scheduled_ = true;
  std::weak_ptr<bool> alive = alive_;
  loop_.run_at(loop_.now_us() + delay_us, [this, alive] {
    if (alive.expired() || !*alive.lock()) return;
    sweep_scheduled_ = false;
    sweep();
  });
}

// One batch of blocks per statement (a short transaction of its own); the batches of one pass follow each other
// at once, then the next pass waits for the sweep interval. A failed batch waits for the next interval too.
void PgClient::sweep() {
  if (closed_) return;
  auto* r = new PgRequest;
  r->statement = kSweepStatement;
  r->param(std::to_string(sweep_block_));
  r->param(std::to_string(shared_->options.sweep_blocks));
  r->deadline_us = monotonic_now_us() + shared_->options.timeout_us;
  std::weak_ptr<bool> alive = alive_;
  r->done = [this, alive](PgRequest& done) {
    if (alive.expired() || !*alive.lock()) return;
    if (done.failed() || done.row.size() != 2) {
      sweep_block_ = 0;
      return schedule_sweep(shared_->options.sweep_us);
    }
    const int64_t next = std::stoll(done.row[1]);
    if (next == 0) shared_->sweeps.fetch_add(1, std::memory_order_relaxed);
    const bool other_sweeper = next == sweep_block_ && done.row[0] == "0";
    sweep_block_ = next;
    if (sweep_block_ == 0 || other_sweeper) return schedule_sweep(shared_->options.sweep_us);
    if (!closed_) sweep();
  };
  route(r);
}

}  // namespace ratewarden
