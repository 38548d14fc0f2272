#include "pg_connection.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <vector>

#include "io/fork_guard.hpp"
#include "metrics/call_metrics.hpp"
#include "ratewarden/clock.hpp"

namespace ratewarden {
namespace {

// libpq's messages end with a newline.
std::string trimmed(const char* message) {
  std::string s = message != nullptr ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// SQLSTATE 57014: the statement ran past statement_timeout (the store's timeout) on the server.
ErrorCode code_of(const PGresult* result) {
  const char* state = libpq().resultErrorField(result, PG_DIAG_SQLSTATE);
  return state != nullptr && std::string(state) == "57014" ? ErrorCode::store_timeout : ErrorCode::store_error;
}

}  // namespace

void finish_request(PgRequest* request) {
  try {
    request->done(*request);
  } catch (...) {  // a callback must not take the loop down with it
  }
  delete request;
}

PgConnection::~PgConnection() { fail_all(ErrorCode::store_unavailable, shared_.name + ": the store was closed"); }

void PgConnection::send(PgRequest* request) {
  if (state_ == State::ready) return append(request);
  queued_.push_back(request);
  if (state_ == State::closed) start_connect();
}

void PgConnection::start_connect() {
  const PgOptions& o = shared_.options;
  const std::string port = std::to_string(o.port);
  // The store's timeout is the server's too: a call that waits on a lock or runs long is cancelled there.
  const std::string session = "-c statement_timeout=" + std::to_string((o.timeout_us + 999) / 1000) +
                              " -c synchronous_commit=off -c plan_cache_mode=force_generic_plan";
  std::vector<const char*> keys = {"host", "port", "dbname", "user", "application_name", "options"};
  std::vector<const char*> values = {o.host.c_str(), port.c_str(), o.dbname.empty() ? nullptr : o.dbname.c_str(),
                                     o.user.empty() ? nullptr : o.user.c_str(), "ratewarden", session.c_str()};
  if (o.has_password) {
    keys.push_back("password");
    values.push_back(o.password.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  conn_ = pq_.connectStartParams(keys.data(), values.data(), 0);
  if (conn_ == nullptr || pq_.status(conn_) == CONNECTION_BAD || pq_.setnonblocking(conn_, 1) != 0) {
    const std::string why = conn_ != nullptr ? server_message() : "out of memory";
    return server_failed(ErrorCode::store_unavailable, shared_.name + ": cannot connect: " + why);
  }
  pq_.setNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);  // the set-up's "already exists" notices
  state_ = State::connecting;
  connect_deadline_us_ = monotonic_now_us() + o.connect_timeout_us;
  // As if PQconnectPoll had answered PGRES_POLLING_WRITING (libpq's documented start).
  watch(true);
}

void PgConnection::watch(bool want_write) {
  const int fd = pq_.socket(conn_);
  if (fd != fd_) {  // libpq may open a new socket while it connects (another address of the host)
    if (fd_ >= 0) {
      loop_.unwatch(fd_);
      unregister_inherited_fd(fd_);
    }
    fd_ = fd;
    watched_ = 0;
    if (fd_ < 0) return;
    register_inherited_fd(fd_);
  }
  const uint32_t events = want_write ? EPOLLIN | EPOLLOUT : static_cast<uint32_t>(EPOLLIN);
  // Unchanged on a ready connection (after nearly every flush): no epoll_ctl. Not while connecting, when libpq may
  // have closed the socket and opened another under the same number, which epoll no longer watches.
  if (events == watched_ && state_ == State::ready) return;
  watched_ = events;
  loop_.watch(fd_, events, this);
}

void PgConnection::continue_connect() {
  switch (pq_.connectPoll(conn_)) {
    case PGRES_POLLING_READING: return watch(false);
    case PGRES_POLLING_WRITING: return watch(true);
    case PGRES_POLLING_OK:
      watch(false);
      if (!shared_.schema_ready) return start_check();
      return enter_pipeline();
    default:
      return server_failed(ErrorCode::store_unavailable, shared_.name + ": cannot connect: " + server_message());
  }
}

// The schema's version, read once per store and process. No version table (a new database, or a schema from
// before version 4) reads as 0; so does any other error, which the set-up then reports.
void PgConnection::start_check() {
  found_version_ = 0;
  send_schema_query(shared_.version_sql, State::checking);
}

// One query of the schema step, in the simple protocol; its results are read in state `next`.
void PgConnection::send_schema_query(const std::string& sql, State next) {
  if (pq_.sendQuery(conn_, sql.c_str()) == 0)
    return server_failed(ErrorCode::store_unavailable, shared_.name + ": " + server_message());
  state_ = next;
  dirty_ = true;
  loop_.mark_dirty(this);
}

void PgConnection::read_check() {
  if (pq_.consumeInput(conn_) == 0)
    return server_failed(ErrorCode::store_unavailable, shared_.name + ": " + server_message());
  while (pq_.isBusy(conn_) == 0) {
    PGresult* r = pq_.getResult(conn_);
    if (r == nullptr) break;
    if (pq_.resultStatus(r) == PGRES_TUPLES_OK && pq_.ntuples(r) == 1 && pq_.nfields(r) == 1)
      found_version_ = std::strtoll(pq_.getvalue(r, 0, 0), nullptr, 10);
    pq_.clear(r);
  }
  if (pq_.isBusy(conn_) != 0) return;
  const std::string where = shared_.options.schema + "." + shared_.options.table;
  if (found_version_ > kSchemaVersion)
    return fail_all(ErrorCode::store_error,
                    shared_.name + ": the database holds schema version " + std::to_string(found_version_) + " of " +
                        where + ", newer than this library's " + std::to_string(kSchemaVersion) +
                        ": upgrade the library (a database is never downgraded)");
  if (found_version_ == kSchemaVersion) {
    shared_.schema_ready = true;
    end_schema_step();
    return enter_pipeline();
  }
  if (shared_.options.create) return start_setup();
  if (found_version_ > 0)
    return fail_all(ErrorCode::store_error,
                    shared_.name + ": the database holds schema version " + std::to_string(found_version_) + " of " +
                        where + ", older than this library's " + std::to_string(kSchemaVersion) +
                        ": run scripts/postgres_schema.sh again (?create=0 leaves the schema to you)");
  end_schema_step();  // create=0 and no version row: preparing the statements tells whether the schema is there
  return enter_pipeline();
}

// Creates or upgrades the schema: one simple-protocol query, hence one transaction, bounded by connect_timeout.
void PgConnection::start_setup() {
  setup_error_.clear();
  send_schema_query(shared_.setup_sql, State::setting_up);
}

void PgConnection::read_setup() {
  if (pq_.consumeInput(conn_) == 0)
    return server_failed(ErrorCode::store_unavailable, shared_.name + ": " + server_message());
  while (pq_.isBusy(conn_) == 0) {
    PGresult* r = pq_.getResult(conn_);
    if (r == nullptr) {
      if (!setup_error_.empty())
        return fail_all(ErrorCode::store_error, shared_.name + ": creating the schema failed: " + setup_error_);
      shared_.schema_ready = true;
      end_schema_step();
      return enter_pipeline();
    }
    if (pq_.resultStatus(r) == PGRES_FATAL_ERROR && setup_error_.empty())
      setup_error_ = trimmed(pq_.resultErrorMessage(r));
    pq_.clear(r);
  }
}

// The calls that waited for the schema step get their whole timeout after it (one that came late in the step keeps
// its own deadline if that is later: never more than the timeout once the step is done).
void PgConnection::end_schema_step() {
  const int64_t deadline_us = monotonic_now_us() + shared_.options.timeout_us;
  for (PgRequest* r : queued_) r->deadline_us = std::max(r->deadline_us, deadline_us);
}

void PgConnection::enter_pipeline() {
  if (pq_.enterPipelineMode(conn_) == 0)
    return server_failed(ErrorCode::store_unavailable, shared_.name + ": " + server_message());
  for (const PgStatement& s : shared_.statements) {
    if (pq_.sendPrepare(conn_, s.name, s.sql.c_str(), 0, nullptr) == 0)
      return server_failed(ErrorCode::store_unavailable, shared_.name + ": " + server_message());
  }
  waiting_.push_back(Pending{nullptr, true});  // one sync for them all
  if (pq_.pipelineSync(conn_) == 0)
    return server_failed(ErrorCode::store_unavailable, shared_.name + ": " + server_message());
  state_ = State::ready;
  if (shared_.metrics && !counted_) shared_.metrics->connection_opened();
  counted_ = true;
  setup_error_.clear();
  std::deque<PgRequest*> queued;
  queued.swap(queued_);
  for (PgRequest* r : queued) append(r);
  dirty_ = true;
  loop_.mark_dirty(this);
}

void PgConnection::append(PgRequest* request) {
  const size_t n = request->values.size();
  std::vector<const char*> values(n);
  std::vector<int> lengths(n);
  for (size_t i = 0; i < n; ++i) {
    values[i] = request->is_null[i] ? nullptr : request->values[i].data();
    lengths[i] = static_cast<int>(request->values[i].size());
  }
  if (pq_.sendQueryPrepared(conn_, request->statement, static_cast<int>(n), values.data(), lengths.data(),
                          request->formats.data(), 0) == 0 ||
      pq_.pipelineSync(conn_) == 0) {
    request->fail(ErrorCode::store_unavailable, shared_.name + ": " + server_message());
    finish_request(request);
    return server_failed(ErrorCode::store_unavailable, shared_.name + ": " + server_message());
  }
  waiting_.push_back(Pending{request, false});
  if (!dirty_) {
    dirty_ = true;
    loop_.mark_dirty(this);
  }
}

void PgConnection::flush() {
  dirty_ = false;
  if (conn_ == nullptr) return;
  const int left = pq_.flush(conn_);
  if (left < 0) return server_failed(ErrorCode::store_unavailable, shared_.name + ": " + server_message());
  watch(left == 1);
}

void PgConnection::on_io(uint32_t events) {
  if (conn_ == nullptr) return;
  switch (state_) {
    case State::connecting: return continue_connect();
    case State::checking:
      if ((events & EPOLLOUT) != 0) flush();
      if (conn_ != nullptr) read_check();
      return;
    case State::setting_up:
      if ((events & EPOLLOUT) != 0) flush();
      if (conn_ != nullptr) read_setup();
      return;
    case State::ready:
      if ((events & EPOLLOUT) != 0) flush();
      if (conn_ != nullptr && (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0) read_results();
      return;
    case State::closed: return;
  }
}

void PgConnection::read_results() {
  if (pq_.consumeInput(conn_) == 0)
    return server_failed(ErrorCode::store_unavailable, shared_.name + ": connection lost: " + server_message());
  while (!waiting_.empty() && pq_.isBusy(conn_) == 0) {
    PGresult* r = pq_.getResult(conn_);
    Pending& p = waiting_.front();
    if (r == nullptr) {
      if (!p.after_result) break;  // nothing more has arrived
      p.after_result = false;
      continue;
    }
    if (pq_.resultStatus(r) != PGRES_PIPELINE_SYNC) {
      take_result(p, r);
      pq_.clear(r);
      p.after_result = true;
      continue;
    }
    pq_.clear(r);
    const Pending done = p;
    waiting_.pop_front();
    if (done.prepare && !setup_error_.empty()) {
      shared_.schema_ready = false;  // dropped, or lost in a crash: the next connection creates it again
      return fail_all(ErrorCode::store_error, shared_.name + ": preparing the statements failed (is the schema "
                                              "there? ?create=0 leaves it to you): " + setup_error_);
    }
    if (done.prepare) connect_deadline_us_ = 0;
    health_.on_server_answer();
    if (done.request != nullptr) finish_request(done.request);
    if (conn_ == nullptr) return;  // a completion closed the store
  }
}

void PgConnection::take_result(Pending& p, PGresult* r) {
  const ExecStatusType status = pq_.resultStatus(r);
  const bool ok = status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK;
  if (p.prepare) {
    if (!ok && setup_error_.empty()) setup_error_ = trimmed(pq_.resultErrorMessage(r));
    return;
  }
  PgRequest* request = p.request;
  if (request == nullptr || request->failed() || !request->row.empty()) return;  // timed out, or a second result
  if (!ok) {
    const std::string message = trimmed(pq_.resultErrorMessage(r));
    request->fail(status == PGRES_FATAL_ERROR ? code_of(r) : ErrorCode::store_error,
                  shared_.name + ": " + (message.empty() ? std::string(pq_.resStatus(status)) : message));
    return;
  }
  if (pq_.ntuples(r) < 1) return;
  for (int i = 0; i < pq_.nfields(r); ++i) request->row.emplace_back(pq_.getvalue(r, 0, i), pq_.getlength(r, 0, i));
}

int64_t PgConnection::next_deadline_us() const {
  int64_t next = connect_deadline_us_ != 0 ? connect_deadline_us_ : INT64_MAX;
  if (!in_schema_step())
    for (const PgRequest* r : queued_) next = std::min(next, r->deadline_us);
  for (const Pending& p : waiting_) {
    if (p.request != nullptr) next = std::min(next, p.request->deadline_us);
  }
  // A silent server: the connection goes one timeout after its oldest request's deadline.
  if (!waiting_.empty() && waiting_.front().request == nullptr && !waiting_.front().prepare)
    next = std::min(next, silent_since_us_ + shared_.options.timeout_us);
  return next;
}

void PgConnection::expire(int64_t now) {
  if (connect_deadline_us_ != 0 && now >= connect_deadline_us_)
    return server_failed(ErrorCode::store_timeout, shared_.name + ": cannot connect within the connect timeout");
  const std::string timeout = shared_.name + ": no reply within the timeout";
  // Completions may send more (to this connection too): collect first, finish after.
  std::vector<PgRequest*> expired;
  if (in_schema_step()) return;  // nothing is sent yet; connect_timeout bounds the step
  auto late = std::stable_partition(queued_.begin(), queued_.end(), [now](PgRequest* r) { return r->deadline_us > now; });
  expired.assign(late, queued_.end());
  queued_.erase(late, queued_.end());
  for (PgRequest* r : expired) {
    r->fail(ErrorCode::store_timeout, timeout);
    finish_request(r);
  }
  for (size_t i = 0; i < waiting_.size(); ++i) {
    Pending& p = waiting_[i];
    if (p.request == nullptr || p.request->deadline_us > now) continue;
    if (i == 0) silent_since_us_ = p.request->deadline_us;
    PgRequest* r = p.request;
    p.request = nullptr;  // its result, if it ever comes, is dropped
    r->fail(ErrorCode::store_timeout, timeout);
    finish_request(r);
    if (conn_ == nullptr) return;
  }
  if (!waiting_.empty() && waiting_.front().request == nullptr && !waiting_.front().prepare &&
      now >= silent_since_us_ + shared_.options.timeout_us)
    server_failed(ErrorCode::store_timeout, shared_.name + ": the server stopped answering; reconnecting");
}

void PgConnection::server_failed(ErrorCode code, const std::string& message) {
  health_.on_server_failure(message);
  fail_all(code, message);
}

void PgConnection::fail_all(ErrorCode code, const std::string& message) {
  drop_connection();
  std::deque<Pending> waiting;
  waiting.swap(waiting_);
  std::deque<PgRequest*> queued;
  queued.swap(queued_);
  for (Pending& p : waiting) {
    if (p.request == nullptr) continue;
    p.request->fail(code, message);
    finish_request(p.request);
  }
  for (PgRequest* r : queued) {
    r->fail(code, message);
    finish_request(r);
  }
}

void PgConnection::drop_connection() {
  if (dirty_) {
    loop_.unmark_dirty(this);
    dirty_ = false;
  }
  if (fd_ >= 0) {
    loop_.unwatch(fd_);
    unregister_inherited_fd(fd_);
    fd_ = -1;
    watched_ = 0;
  }
  if (conn_ != nullptr) pq_.finish(conn_);
  conn_ = nullptr;
  state_ = State::closed;
  if (counted_ && shared_.metrics) shared_.metrics->connection_closed();
  counted_ = false;
  connect_deadline_us_ = 0;
}

std::string PgConnection::server_message() const {
  const std::string m = conn_ != nullptr ? trimmed(pq_.errorMessage(conn_)) : std::string();
  return m.empty() ? "the connection failed" : m;
}

}  // namespace ratewarden
