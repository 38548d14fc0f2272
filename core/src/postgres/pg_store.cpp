#include "pg_store.hpp"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "metrics/call_metrics.hpp"
#include "net/network_url.hpp"
#include "ratewarden/algorithms.hpp"
#include "schema.hpp"

namespace ratewarden {
namespace {

void put_int32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

// The keys as a bytea[] in PostgreSQL's binary array format: any bytes, no quoting, no SQL built from them.
std::string bytea_array(const std::string* keys, size_t n) {
  constexpr uint32_t kByteaOid = 17;
  std::string out;
  put_int32(out, 1);  // dimensions
  put_int32(out, 0);  // no nulls
  put_int32(out, kByteaOid);
  put_int32(out, static_cast<uint32_t>(n));
  put_int32(out, 1);  // lower bound
  for (size_t i = 0; i < n; ++i) {
    put_int32(out, static_cast<uint32_t>(keys[i].size()));
    out += keys[i];
  }
  return out;
}

template <typename F>
std::string int_array(size_t n, F value) {
  std::string out = "{";
  for (size_t i = 0; i < n; ++i) out += (i ? "," : "") + value(i);
  return out + "}";
}

// The answer of <table>_decide: "{allowed,limit,remaining,reset_after,retry_after,used,policy_index}"; of
// <table>_reserve: the same, and when allowed ",wait,ticket"; of <table>_cancel: the first six (allowed = given).
Decision parse_decision(const PgRequest& r, const std::string& name) {
  long long v[9] = {};
  int n = 0;
  const char* p = r.row.size() == 1 ? r.row[0].c_str() : "";
  if (*p == '{') ++p;
  while (n < 9 && *p != '\0') {
    char* end = nullptr;
    v[n++] = std::strtoll(p, &end, 10);
    if (end == p || (*end != ',' && *end != '}')) break;
    p = end + 1;
    if (*end == '}') break;
  }
  if (r.row.size() != 1 || *p != '\0' || p[-1] != '}' || (n != 6 && n != 7 && n != 9))
    throw StoreError(ErrorCode::store_error, name + ": unexpected reply");
  Decision d{v[0] == 1, v[1], v[2], v[3], v[4], v[5], static_cast<int32_t>(v[6])};
  d.wait_us = v[7];
  d.ticket = v[8];
  return d;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// <table>_read_resets's row: cursor, gap ("t"/"f"), epoch, the user keys hex-encoded and comma-separated.
bool parse_reset_log(const PgRequest& r, ResetLogRead& out) {
  if (r.row.size() != 4) return false;
  char* end = nullptr;
  out.cursor = std::strtoll(r.row[0].c_str(), &end, 10);
  if (r.row[0].empty() || *end != '\0') return false;
  out.gap = r.row[1] == "t";
  out.epoch = r.row[2];
  const std::string& hex = r.row[3];
  std::string tag;
  for (size_t i = 0; i <= hex.size(); ++i) {
    if (i == hex.size() || hex[i] == ',') {
      if (!tag.empty()) out.tags.push_back(std::move(tag));
      tag.clear();
      continue;
    }
    const int hi = hex_digit(hex[i]), lo = i + 1 < hex.size() ? hex_digit(hex[i + 1]) : -1;
    if (hi < 0 || lo < 0) return false;
    tag.push_back(static_cast<char>(hi * 16 + lo));
    ++i;
  }
  return true;
}

// How a request of a closed store fails: at once, back to its owner.
void reject_request(PgRequest* request, const std::string& message) {
  request->fail(ErrorCode::store_unavailable, message);
  finish_request(request);
}

// A request's end told to a DoneCallback: nothing, or the request's error.
std::function<void(PgRequest&)> ends_with(DoneCallback done) {
  return [done = std::move(done)](PgRequest& req) {
    if (!req.failed()) return done(nullptr);
    const StoreError e(req.error, req.error_message);
    done(&e);
  };
}

// The store's name: its URL, the password masked, with the options in effect.
std::string url_of(const PgOptions& o) {
  std::string name = "postgres://";
  if (!o.user.empty()) name += o.user + (o.has_password ? ":***@" : "@");
  else if (o.has_password) name += ":***@";
  name += (o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host) + ":" + std::to_string(o.port) + "/" +
          o.dbname + "?schema=" + o.schema + "&table=" + o.table + "&" + describe_network_options(o);
  return name;
}

}  // namespace

PostgresStore::PostgresStore(PgOptions options)
    : shared_(std::make_shared<PgShared>()),
      holder_([shared = shared_](IoLoop& loop) { return std::make_unique<PgClient>(loop, shared); }, reject_request,
              url_of(options)) {
  shared_->name = url_of(options);
  shared_->metrics = std::make_shared<CallMetrics>(shared_->name);
  // The schema step (the version check, and the set-up when the schema is missing or older) is bounded by
  // connect_timeout, not by the calls' timeout, which is the session's statement_timeout: under that the set-up was
  // cancelled whenever it waited longer for the advisory lock of processes starting at once (issue 33), and a cold
  // process's first calls failed (issue 38). The calls waiting for it get their whole timeout after it.
  shared_->setup_sql = "SET LOCAL statement_timeout = " + std::to_string((options.connect_timeout_us + 999) / 1000) +
                       ";\n" + schema_sql(options);
  shared_->version_sql = version_sql(options);
  shared_->statements = pg_statements(options);
  shared_->options = std::move(options);
}

PostgresStore::~PostgresStore() = default;

void PostgresStore::close() { holder_.close(); }

PgRequest* PostgresStore::request(const char* statement) const {
  auto* r = new PgRequest;
  r->statement = statement;
  r->deadline_us = monotonic_now_us() + shared_->options.timeout_us;
  return r;
}

PgRequest* PostgresStore::decision_request(const StoreCall& call, const std::string& now) const {
  const bool one = call.count == 1 && (call.mode == Mode::hit || call.mode == Mode::peek);
  PgRequest* r = request(call.mode == Mode::cancel ? kCancelStatement
                         : one                     ? kDecideOneStatement
                         : call.mode == Mode::reserve ? kReserveStatement
                         : call.mode == Mode::refund  ? kRefundStatement
                                                      : kDecideStatement);
  const Policy* p = call.policies;
  if (call.mode == Mode::cancel || one) {  // one policy, scalar parameters (cancel: Limiter::cancel)
    r->param(call.keys[0], 1);
    r->param(std::string(algorithm_name(p[0].algorithm)));
    r->param(std::to_string(p[0].limit));
    r->param(std::to_string(p[0].period_us));
    r->param(std::to_string(p[0].option_value()));
    r->param(std::to_string(call.cost));
    r->param(one ? (call.mode == Mode::hit ? "t" : "f") : std::to_string(call.ticket));
  } else {
    r->param(bytea_array(call.keys, call.count), 1);
    r->param(int_array(call.count, [p](size_t i) { return std::string(algorithm_name(p[i].algorithm)); }));
    r->param(int_array(call.count, [p](size_t i) { return std::to_string(p[i].limit); }));
    r->param(int_array(call.count, [p](size_t i) { return std::to_string(p[i].period_us); }));
    r->param(int_array(call.count, [p](size_t i) { return std::to_string(p[i].option_value()); }));
    r->param(std::to_string(call.cost));
    if (call.mode == Mode::reserve)
      r->param(std::to_string(call.max_wait_us));
    else if (call.mode != Mode::refund)
      r->param(call.mode == Mode::hit ? "t" : "f");
  }
  if (now.empty())
    r->null_param();
  else
    r->param(now);
  return r;
}

void PostgresStore::decide_async(const StoreCall& call, DecisionCallback done) {
  done = shared_->metrics->timed(std::move(done));
  const Clock& clock = shared_->options.clock;
  PgRequest* r = decision_request(call, clock ? std::to_string(clock()) : std::string());
  r->done = [done = std::move(done), name = &shared_->name](PgRequest& req) {
    if (req.failed()) {
      const StoreError e(req.error, req.error_message);
      return done(nullptr, &e);
    }
    Decision d;
    try {
      d = parse_decision(req, *name);
    } catch (const StoreError& e) {
      return done(nullptr, &e);
    }
    done(&d, nullptr);
  };
  holder_.submit(r);
}

void PostgresStore::decide_many_async(const StoreCall* calls, size_t n, DecisionsCallback done) {
  if (n == 0) return done(nullptr, nullptr);
  done = shared_->metrics->timed(n, std::move(done));
  struct Batch {
    std::vector<Decision> decisions;
    std::vector<std::optional<StoreError>> errors;
    size_t left;
    DecisionsCallback done;
  };
  auto batch = std::make_shared<Batch>(Batch{std::vector<Decision>(n), std::vector<std::optional<StoreError>>(n), n,
                                             std::move(done)});
  const Clock& clock = shared_->options.clock;
  const std::string now = clock ? std::to_string(clock()) : std::string();
  std::vector<PgRequest*> requests;
  requests.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    PgRequest* r = decision_request(calls[i], now);
    r->batch = batch.get();
    r->done = [batch, i, name = &shared_->name](PgRequest& req) {
      if (req.failed()) {
        batch->errors[i] = StoreError(req.error, req.error_message);
      } else {
        try {
          batch->decisions[i] = parse_decision(req, *name);
        } catch (const StoreError& e) {
          batch->errors[i] = e;
        }
      }
      if (--batch->left == 0) batch->done(batch->decisions.data(), batch->errors.data());
    };
    requests.push_back(r);
  }
  holder_.submit(std::move(requests));
}

void PostgresStore::reset_async(const std::string* keys, size_t count, std::string_view tag, DoneCallback done) {
  PgRequest* r = request(kResetStatement);
  r->param(bytea_array(keys, count), 1);
  r->param(std::string(tag), 1);  // logged for the hybrid modes (decide.sql, <table>_reset)
  r->done = ends_with(shared_->metrics->timed(std::move(done)));
  holder_.submit(r);
}

void PostgresStore::read_resets_async(int64_t cursor, ResetLogCallback done) {
  PgRequest* r = request(kReadResetsStatement);
  r->param(std::to_string(cursor));
  r->param("1000");
  r->done = [done = std::move(done), name = &shared_->name](PgRequest& req) {
    ResetLogRead read;
    if (!req.failed() && !parse_reset_log(req, read)) req.fail(ErrorCode::store_error, *name + ": unexpected reply");
    if (!req.failed()) return done(&read, nullptr);
    const StoreError e(req.error, req.error_message);
    done(nullptr, &e);
  };
  holder_.submit(r);
}

void PostgresStore::check_async(DoneCallback done) {
  PgRequest* r = request(kCheckStatement);
  r->done = ends_with(shared_->metrics->timed(std::move(done)));
  holder_.submit(r);
}

StoreStats PostgresStore::stats() const {
  StoreStats s = Store::stats();
  s.network = true;
  shared_->metrics->fill(s);
  s.pool_size = shared_->options.pool;
  s.sweeps = shared_->sweeps.load(std::memory_order_relaxed);
  return s;
}

}  // namespace ratewarden
