#include "rls_service.hpp"

#include <google/protobuf/stubs/logging.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <optional>
#include <vector>

#include "matcher.hpp"
#include "ratewarden/errors.hpp"

namespace ratewarden::server {
namespace {

using Descriptor = envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
using DescriptorStatus = RlsResponse::DescriptorStatus;
using RateLimit = RlsResponse::RateLimit;
constexpr size_t kMaxOverrides = 1000;
constexpr uint32_t kUnlimitedRemaining = std::numeric_limits<uint32_t>::max();

// The unit of a period, when it is one (a policy string's "10/5m" has none: UNKNOWN, as Envoy expects then).
Unit unit_of(int64_t period_us) {
  for (Unit u : {Unit::second, Unit::minute, Unit::hour, Unit::day, Unit::week, Unit::month, Unit::year})
    if (unit_seconds(u) * 1000000 == period_us) return u;
  return Unit::unknown;
}

// The storage key of a descriptor: its domain and entries, each part length-prefixed so that no two descriptors
// share one ("a_b" + "c" and "a" + "b_c" do upstream), then the epoch window's start for the peer's fixed windows.
std::string descriptor_key(const std::string& domain, const Descriptor& d) {
  std::string key = "rls:";
  auto part = [&key](const std::string& s) {
    key += std::to_string(s.size());
    key += ':';
    key += s;
  };
  part(domain);
  for (const auto& e : d.entries()) {
    part(e.key());
    part(e.value());
  }
  return key;
}

// A rule's shared key: its template with each {<entry key>} replaced by the request's value for it (the last entry
// of that key: the deepest level's).
std::string shared_key(const std::vector<std::pair<bool, std::string>>& parts, const Entries& entries) {
  std::string key;
  for (const auto& [placeholder, text] : parts) {
    if (!placeholder) {
      key += text;
      continue;
    }
    for (auto it = entries.rbegin(); it != entries.rend(); ++it)
      if (it->first == text) {
        key += it->second;
        break;
      }
  }
  return key;
}

int64_t wall_now_s(const ServiceOptions& o) {
  if (o.wall_now_s) return o.wall_now_s();
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// One descriptor's part of a call: what limits it, and how much it charges.
struct Plan {
  std::shared_ptr<Limiter> limiter;  // null: no limit, unlimited, or a limit of 0
  const Rule* rule = nullptr;        // the configuration's (null for an override)
  bool unlimited = false;
  bool shadow = false;
  bool quota = false;    // quota_mode: over its limit, it refuses the call only with every quota descriptor over
  bool limited = false;  // a limit applies (the status gets current_limit)
  bool refused = false;  // over without a store call: a limit of 0, or a cost over the limiter's capacity
  std::string name;
  Unit unit = Unit::unknown;           // the peer's form (a limit of 0 answers it with requests_per_unit 0)
  int64_t epoch_window_s = 0;          // > 0: a fixed window aligned to the epoch, this long
  std::string key;
  int64_t hits = 1;
};

class RateLimiting::Call {
 public:
  Call(RlsResponse* response, OnStoreError on_store_error, int64_t now_s, ServiceOptions::Headers headers, size_t n)
      : response_(response), on_store_error_(on_store_error), now_s_(now_s), headers_(headers), plans_(n),
        decisions_(n), failures_(n), windows_s_(n) {}

  std::vector<Plan>& plans() { return plans_; }

  // Starts the store calls; the last answer (maybe one made here) finishes the call and calls `done`. Nothing here
  // throws past a plan: the core throws before a call starts (then `done` of that call never runs), and a plan that
  // did not start counts as answered, so the call always finishes.
  static void start(const std::shared_ptr<Call>& call, RlsDone done) {
    call->done_ = std::move(done);
    call->left_.store(call->plans_.size() + 1, std::memory_order_relaxed);
    for (size_t i = 0; i < call->plans_.size(); ++i) {
      Plan& p = call->plans_[i];
      if (!p.limiter || p.refused) {
        call->answered();
        continue;
      }
      auto on_answer = [call, i](const Decision* d, const Error* e) {
        if (d != nullptr) call->decisions_[i] = *d;
        else call->failures_[i] = e->code();
        call->answered();
      };
      try {
        if (p.hits == 0)
          p.limiter->peek_async(p.key, 1, on_answer, Completion::any_thread);
        else
          p.limiter->hit_async(p.key, p.hits, on_answer, Completion::any_thread);
      } catch (const InvalidArgument&) {
        call->failures_[i] = ErrorCode::invalid_argument;
        call->answered();
      } catch (const std::exception&) {
        call->failures_[i] = ErrorCode::internal;
        call->answered();
      }
    }
    call->answered();  // the start's own share
  }

 private:
  void answered() {
    if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) finish();
  }

  void finish() {
    grpc::Status status;
    try {
      status = respond();
    } catch (const std::exception& e) {  // answered all the same: the caller waits, and in-flight counts this call
      status = grpc::Status(grpc::StatusCode::INTERNAL, std::string("the call failed: ") + e.what());
    }
    done_(status);
  }

  // Fills the response from the answers; the call's status.
  grpc::Status respond() {
    size_t over = 0, quotas = 0, quotas_over = 0;
    for (size_t i = 0; i < plans_.size(); ++i) {
      if (failures_[i] == ErrorCode::invalid_argument)
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "descriptor " + std::to_string(i) +
                                                                    ": its key is empty or too long (1 to 4096 bytes)");
      if (failures_[i] == ErrorCode::internal)
        return grpc::Status(grpc::StatusCode::INTERNAL, "descriptor " + std::to_string(i) + " could not be decided");
      if (failures_[i] && on_store_error_ == OnStoreError::raise)
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the store failed: " + error_name(*failures_[i]));
      const bool refused = status(i, *response_->add_statuses());
      if (plans_[i].quota) {
        ++quotas;
        quotas_over += refused;
      } else {
        over += refused;
      }
    }
    // envoyproxy/ratelimit's quota mode: quota descriptors over their limits refuse the call only when all are.
    const bool refused = over > 0 || (quotas > 0 && quotas_over == quotas);
    response_->set_overall_code(refused ? RlsResponse::OVER_LIMIT : RlsResponse::OK);
    if (headers_ == ServiceOptions::Headers::envoy) add_envoy_headers();
    if (headers_ == ServiceOptions::Headers::ietf) add_ietf_headers();
    return grpc::Status::OK;
  }

  // The limiter's policy that refuses a cost over its capacity: the one with the smallest.
  static const Policy& smallest_policy(const Limiter& limiter) {
    const std::vector<Policy>& policies = limiter.policies();
    return *std::min_element(policies.begin(), policies.end(),
                             [](const Policy& a, const Policy& b) { return a.capacity() < b.capacity(); });
  }

  // Fills descriptor i's status; true when it is over its limit (after shadow mode; quota mode's is the caller's).
  bool status(size_t i, DescriptorStatus& s) {
    const Plan& p = plans_[i];
    s.set_code(RlsResponse::OK);
    if (p.unlimited) {
      s.set_limit_remaining(kUnlimitedRemaining);
      return false;
    }
    if (!p.limited) return false;
    if (failures_[i]) {  // on_store_error: allow answers as if no limit applied; deny refuses for a second
      skipped_ = error_name(*failures_[i]);
      if (on_store_error_ == OnStoreError::allow) return false;
      s.set_code(RlsResponse::OVER_LIMIT);
      s.mutable_duration_until_reset()->set_seconds(1);
      return !p.shadow;
    }
    RateLimit& limit = *s.mutable_current_limit();
    limit.set_name(p.name);
    int64_t reset_s = 0;
    bool allowed = p.hits == 0;  // a limit decided without the store: only a check passes
    int64_t remaining = 0;
    if (const std::optional<Decision>& d = decisions_[i]) {
      allowed = d->allowed || p.hits == 0;
      remaining = d->remaining;
      const Policy& policy = p.limiter->policies()[d->policy_index];
      windows_s_[i] = (policy.period_us + 999999) / 1000000;
      limit.set_requests_per_unit(static_cast<uint32_t>(policy.limit));
      limit.set_unit(static_cast<RateLimit::Unit>(p.epoch_window_s > 0 ? p.unit : unit_of(policy.period_us)));
      reset_s = (d->reset_after_us + 999999) / 1000000;
    } else if (p.limiter) {  // a cost over the limiter's capacity: its smallest policy refuses it
      const Policy& policy = smallest_policy(*p.limiter);
      limit.set_requests_per_unit(static_cast<uint32_t>(policy.limit));
      limit.set_unit(static_cast<RateLimit::Unit>(p.epoch_window_s > 0 ? p.unit : unit_of(policy.period_us)));
      // No wait admits that cost; the policy's whole period (in whole seconds, rounded up) is when it is all
      // available again, the most a smaller cost may wait.
      windows_s_[i] = reset_s = (policy.period_us + 999999) / 1000000;
    } else {  // a limit of 0
      limit.set_requests_per_unit(0);
      limit.set_unit(static_cast<RateLimit::Unit>(p.unit));
    }
    if (p.epoch_window_s > 0) reset_s = p.epoch_window_s - now_s_ % p.epoch_window_s;
    if (p.epoch_window_s > 0) windows_s_[i] = p.epoch_window_s;
    if (windows_s_[i] == 0) windows_s_[i] = unit_seconds(p.unit);  // a limit decided without the store
    s.set_limit_remaining(static_cast<uint32_t>(remaining));
    if (reset_s > 0) s.mutable_duration_until_reset()->set_seconds(reset_s);
    if (allowed) return false;
    if (p.shadow) return false;  // reported, never refused
    s.set_code(RlsResponse::OVER_LIMIT);
    return true;
  }

  void add_header(const char* name, const std::string& value) {
    auto* h = response_->add_response_headers_to_add();
    h->set_key(name);
    h->set_value(value);
  }

  // The IETF draft's fields (draft-ietf-httpapi-ratelimit-headers, the form of drafts 8 and later, as the HTTP
  // adapters send them): each limited descriptor is a quota named by its rule's name (else its limiter's),
  // RateLimit-Policy: "name";q=<limit>;w=<window s> and RateLimit: "name";r=<remaining>;t=<reset s>.
  void add_ietf_headers() {
    std::string policies, limits;
    for (size_t i = 0; i < plans_.size(); ++i) {
      const DescriptorStatus& s = response_->statuses(static_cast<int>(i));
      if (!s.has_current_limit()) continue;
      const Plan& p = plans_[i];
      const std::string name = sf_string(!p.name.empty() ? p.name
                                         : p.limiter   ? p.limiter->name()
                                                       : "descriptor " + std::to_string(i));
      const char* comma = policies.empty() ? "" : ", ";
      policies += comma + name + ";q=" + std::to_string(s.current_limit().requests_per_unit()) + ";w=" +
                  std::to_string(windows_s_[i]);
      limits += comma + name + ";r=" + std::to_string(s.limit_remaining()) + ";t=" +
                std::to_string(s.duration_until_reset().seconds());
    }
    if (!policies.empty()) {
      add_header("RateLimit-Policy", policies);
      add_header("RateLimit", limits);
    }
    if (!skipped_.empty()) add_header("RateLimit-Skipped", skipped_);
  }

  // A structured field's string: printable ASCII, with \ and " escaped (anything else becomes ?).
  static std::string sf_string(const std::string& text) {
    std::string out = "\"";
    for (const char c : text) {
      if (c == '\\' || c == '"') out += '\\';
      out += (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    return out + '"';
  }

  // envoyproxy/ratelimit's rule: the descriptor with the least remaining (the first of equals), unless one not in
  // quota mode is over its limit (then the last such one); a quota descriptor over its limit is chosen only as the
  // least remaining.
  void add_envoy_headers() {
    const DescriptorStatus* chosen = nullptr;
    bool forced = false;  // chosen for being over its limit
    for (size_t i = 0; i < plans_.size(); ++i) {
      const DescriptorStatus& s = response_->statuses(static_cast<int>(i));
      if (!s.has_current_limit()) continue;
      const bool over = s.code() == RlsResponse::OVER_LIMIT && !plans_[i].quota;
      if (over || chosen == nullptr || (!forced && s.limit_remaining() < chosen->limit_remaining())) {
        chosen = &s;
        forced = forced || over;
      }
    }
    if (chosen != nullptr) {
      add_header("RateLimit-Limit", std::to_string(chosen->current_limit().requests_per_unit()));
      add_header("RateLimit-Remaining", std::to_string(chosen->limit_remaining()));
      add_header("RateLimit-Reset", std::to_string(chosen->duration_until_reset().seconds()));
    }
    if (!skipped_.empty()) add_header("RateLimit-Skipped", skipped_);
  }

  static std::string error_name(ErrorCode code) {
    switch (code) {
      case ErrorCode::store_timeout: return "store-timeout";
      case ErrorCode::store_unavailable: return "store-unavailable";
      default: return "store-error";
    }
  }

  RlsResponse* response_;
  RlsDone done_;
  const OnStoreError on_store_error_;
  const int64_t now_s_;
  const ServiceOptions::Headers headers_;
  std::vector<Plan> plans_;
  std::vector<std::optional<Decision>> decisions_;  // each written by its own answer, read after the last
  std::vector<std::optional<ErrorCode>> failures_;
  std::vector<int64_t> windows_s_;  // each limited descriptor's window, for the IETF fields (written by status())
  std::atomic<size_t> left_{0};
  std::string skipped_;
};

RateLimiting::RateLimiting(std::shared_ptr<const Config> config, std::shared_ptr<Store> store,
                           ServiceOptions options)
    : config_(std::move(config)), store_(std::move(store)), options_(std::move(options)) {}

std::shared_ptr<Limiter> RateLimiting::override_limiter(uint32_t requests_per_unit, int unit, std::string* error) {
  if (unit < 1 || unit > 6) {
    *error = "a limit override needs a unit (SECOND to YEAR)";
    return nullptr;
  }
  if (requests_per_unit > kMaxLimit) {
    *error = "a limit override's requests_per_unit is at most " + std::to_string(kMaxLimit);
    return nullptr;
  }
  if (requests_per_unit == 0) return nullptr;  // refuses every hit: no limiter (the core's limits are 1 or more)
  std::lock_guard<std::mutex> lock(overrides_mu_);
  auto it = overrides_.find({requests_per_unit, unit});
  if (it != overrides_.end()) return it->second;
  // Bounded, never refusing: a limiter holds no counts (they are the store's) and calls in flight hold their own
  // references, so dropping them all only costs their making again.
  if (overrides_.size() >= kMaxOverrides) overrides_.clear();
  LimiterOptions o;
  o.name = "override";
  auto limiter = std::make_shared<Limiter>(
      std::to_string(requests_per_unit) + "/" + std::to_string(unit_seconds(static_cast<Unit>(unit))) + "s", store_, o);
  overrides_.emplace(std::make_pair(requests_per_unit, unit), limiter);
  return limiter;
}

void RateLimiting::decide(const RlsRequest& request, RlsResponse* response, RlsDone done) {
  const auto began = std::chrono::steady_clock::now();
  if (!metrics_.enter(options_.max_in_flight)) {
    metrics_.request(ServerMetrics::error, 0);
    return done(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                             "too many requests in flight: at most " + std::to_string(options_.max_in_flight) +
                                 " (--max-in-flight)"));
  }
  decide_request(request, response, [this, began, response, done = std::move(done)](const grpc::Status& status) {
    metrics_.leave();
    const ServerMetrics::Outcome outcome = !status.ok()                                      ? ServerMetrics::error
                                           : response->overall_code() == RlsResponse::OVER_LIMIT ? ServerMetrics::over_limit
                                                                                                 : ServerMetrics::ok;
    metrics_.request(outcome, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::steady_clock::now() - began).count());
    done(status);
  });
}

void RateLimiting::decide_request(const RlsRequest& request, RlsResponse* response, RlsDone done) {
  std::shared_ptr<Call> call;
  grpc::Status status;
  try {
    status = plan(request, response, call);
  } catch (const std::exception& e) {  // `done` is still ours: answered, never lost
    status = grpc::Status(grpc::StatusCode::INTERNAL, std::string("the request could not be decided: ") + e.what());
  }
  if (!status.ok() || !call) return done(status);
  Call::start(call, std::move(done));
}

grpc::Status RateLimiting::plan(const RlsRequest& request, RlsResponse* response, std::shared_ptr<Call>& call) {
  using grpc::StatusCode;
  if (request.domain().empty())
    return grpc::Status(StatusCode::INVALID_ARGUMENT, "rate limit domain must not be empty");
  if (request.descriptors().empty())
    return grpc::Status(StatusCode::INVALID_ARGUMENT, "rate limit descriptor list must not be empty");
  if (static_cast<size_t>(request.descriptors_size()) > options_.max_descriptors)
    return grpc::Status(StatusCode::INVALID_ARGUMENT,
                        "too many descriptors: " + std::to_string(request.descriptors_size()) + ", at most " +
                            std::to_string(options_.max_descriptors) + " (--max-descriptors)");
  for (const auto& d : request.descriptors())
    if (static_cast<size_t>(d.entries_size()) > options_.max_entries)
      return grpc::Status(StatusCode::INVALID_ARGUMENT,
                          "too many entries in a descriptor: " + std::to_string(d.entries_size()) + ", at most " +
                              std::to_string(options_.max_entries) + " (--max-entries)");

  const std::shared_ptr<const Config> config = this->config();
  const auto domain = config->domains.find(request.domain());
  const size_t n = static_cast<size_t>(request.descriptors_size());
  if (domain == config->domains.end()) {  // no limit for an unknown domain: every descriptor OK
    for (size_t i = 0; i < n; ++i) response->add_statuses()->set_code(RlsResponse::OK);
    response->set_overall_code(RlsResponse::OK);
    return grpc::Status::OK;
  }
  const Domain& dom = domain->second;
  const int64_t now_s = wall_now_s(options_);
  auto planned = std::make_shared<Call>(response, dom.on_store_error, now_s, options_.limit_headers, n);
  std::vector<Plan>& plans = planned->plans();
  const int64_t default_hits = std::max<int64_t>(1, request.hits_addend());
  Entries entries;
  std::vector<std::string> replaced;
  for (size_t i = 0; i < n; ++i) {
    const Descriptor& d = request.descriptors(static_cast<int>(i));
    Plan& p = plans[i];
    p.hits = d.has_hits_addend() ? static_cast<int64_t>(std::min<uint64_t>(d.hits_addend().value(), kMaxLimit + 1))
                                 : default_hits;
    if (d.has_limit()) {  // the caller's own limit: no matching, never shadow, never replaced
      std::string error;
      p.limiter = override_limiter(d.limit().requests_per_unit(), d.limit().unit(), &error);
      if (!error.empty()) return grpc::Status(StatusCode::INVALID_ARGUMENT, error);
      p.limited = true;
      p.unit = static_cast<Unit>(d.limit().unit());
      p.epoch_window_s = unit_seconds(p.unit);
    } else {
      entries.clear();
      for (const auto& e : d.entries()) entries.emplace_back(e.key(), e.value());
      const Node* node = match(dom, entries);
      if (node == nullptr || !node->rule) continue;
      const Rule& r = *node->rule;
      p.rule = &r;
      p.shadow = node->shadow_mode;
      p.unlimited = r.unlimited;
      // As the peer: an unlimited rule's `replaces` count too (it is never replaced itself, below).
      replaced.insert(replaced.end(), r.replaces.begin(), r.replaces.end());
      if (r.unlimited) continue;
      p.quota = node->quota_mode;
      p.limited = true;
      p.limiter = r.limiter;
      p.name = r.name;
      p.unit = r.unit;
      if (r.epoch_window) p.epoch_window_s = unit_seconds(r.unit);
    }
    p.refused = !p.limiter || p.hits > p.limiter->max_cost();  // over without asking the store
    if (p.rule != nullptr && !p.rule->key_template.empty()) {
      p.key = shared_key(p.rule->key_template, entries);
      continue;
    }
    p.key = descriptor_key(request.domain(), d);
    if (p.epoch_window_s > 0) p.key += ":" + std::to_string(now_s - now_s % p.epoch_window_s);
  }
  for (Plan& p : plans)  // a limit another matched rule replaces answers as no limit; an unlimited one stays
    if (p.rule != nullptr && !p.unlimited && !p.rule->name.empty() &&
        std::find(replaced.begin(), replaced.end(), p.rule->name) != replaced.end())
      p = Plan();
  call = std::move(planned);
  return grpc::Status::OK;
}

namespace {

// What protobuf says while this thread parses a request (an invalid UTF-8 string: it logs an ERROR line): the
// request's error, not a log line.
thread_local std::string* parse_error = nullptr;

void protobuf_log(google::protobuf::LogLevel level, const char* file, int line, const std::string& message) {
  if (parse_error != nullptr) {
    if (parse_error->empty()) *parse_error = message.substr(0, message.find(". Use the 'bytes' type"));
    return;
  }
  if (level == google::protobuf::LOGLEVEL_INFO) return;  // as protobuf's own handler
  const char* const names[] = {"INFO", "WARNING", "ERROR", "FATAL"};
  std::fprintf(stderr, "[libprotobuf %s %s:%d] %s\n", names[level < 4 ? level : 2], file, line, message.c_str());
}

}  // namespace

RlsService::RlsService(std::shared_ptr<RateLimiting> limiting) : limiting_(std::move(limiting)) {
  static std::once_flag once;
  std::call_once(once, [] { google::protobuf::SetLogHandler(&protobuf_log); });
}

grpc::ServerUnaryReactor* RlsService::ShouldRateLimit(grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto call = std::make_shared<std::pair<RlsRequest, RlsResponse>>();
  grpc::ByteBuffer bytes(*request);  // shares the request's slices; the reader consumes this copy
  std::string error;
  bool parsed = false;
  {
    grpc::ProtoBufferReader reader(&bytes);
    parse_error = &error;
    parsed = reader.status().ok() && call->first.ParseFromZeroCopyStream(&reader);
    parse_error = nullptr;
  }
  if (!parsed) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "the request is not a RateLimitRequest: " +
                                     (error.empty() ? std::string("its bytes do not parse") : error)));
    return reactor;
  }
  limiting_->decide(call->first, &call->second, [reactor, call, response](const grpc::Status& status) {
    if (!status.ok()) return reactor->Finish(status);
    bool own_buffer = false;
    reactor->Finish(grpc::SerializationTraits<RlsResponse>::Serialize(call->second, response, &own_buffer));
  });
  return reactor;
}

}  // namespace ratewarden::server
