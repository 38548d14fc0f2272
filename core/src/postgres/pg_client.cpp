#include "pg_client.hpp"

#include <algorithm>
#include <climits>

#include "ratewarden/clock.hpp"

namespace ratewarden {

PgClient::PgClient(IoLoop& loop, std::shared_ptr<PgShared> shared)
    : loop_(loop),
      shared_(std::move(shared)),
      circuit_(CircuitOptions{shared_->options.circuit_failures, shared_->options.circuit_backoff_us}) {
  for (int i = 0; i < shared_->options.pool; ++i)
    connections_.push_back(std::make_unique<PgConnection>(loop_, *shared_, *this));
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
  // The calls of one batch (routed one after the other) on one connection, so that calls on one key are answered
  // in the batch's order, as one caller's calls one after the other would be.
  if (request->batch != nullptr && request->batch == batch_) return batch_connection_->send(request);
  // The least busy open connection, round robin among equals; a closed one (not opened yet, or dropped) only when
  // every open one has a call in flight. So a process opens as many connections as it has calls at once, up to
  // pool=: one for a single caller, and none kept idle that its load never needed.
  const size_t n = connections_.size();
  const size_t start = next_++ % n;
  PgConnection* best = nullptr;
  PgConnection* closed = nullptr;
  for (size_t k = 0; k < n; ++k) {
    PgConnection* c = connections_[(start + k) % n].get();
    if (!c->opened()) {
      if (closed == nullptr) closed = c;
    } else if (best == nullptr || c->in_flight() < best->in_flight()) {
      best = c;
    }
  }
  if (closed != nullptr && (best == nullptr || best->in_flight() > 0)) best = closed;
  batch_ = request->batch;
  batch_connection_ = best;
  best->send(request);
}

void PgClient::on_server_failure(const std::string& message) {
  if (!closed_) circuit_.failed(loop_.now_us(), circuit_.probing(), message);
}

void PgClient::close() {
  closed_ = true;
  for (auto& c : connections_) c->fail_all(ErrorCode::store_unavailable, shared_->name + ": the store was closed");
}

int64_t PgClient::next_deadline_us() const {
  int64_t next = INT64_MAX;
  for (const auto& c : connections_) next = std::min(next, c->next_deadline_us());
  return next;
}

void PgClient::expire(int64_t now) {
  for (auto& c : connections_) c->expire(now);
}

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
    const bool other_sweeper = next == sweep_block_ && done.row[0] == "0";
    sweep_block_ = next;
    if (sweep_block_ == 0 || other_sweeper) return schedule_sweep(shared_->options.sweep_us);
    if (!closed_) sweep();
  };
  route(r);
}

}  // namespace ratewarden
