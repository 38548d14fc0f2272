// The parts every store shares: the synchronous forms as waits, batches as independent calls, prefixes.
#include "ratewarden/store.hpp"

#include <atomic>
#include <vector>

#include "io/io_loop.hpp"
#include "ratewarden/errors.hpp"
#include "sync_wait.hpp"

namespace ratewarden {

void check_may_wait(const char* what) {
  if (IoLoop::on_loop_thread())
    throw InvalidArgument(std::string("a synchronous ") + what +
                          " on the I/O thread would wait for itself: from a callback that runs there "
                          "(Completion::any_thread), use the asynchronous form or Completion::library_thread");
}

void rethrow_copy(const Error& error) {
  switch (error.code()) {
    case ErrorCode::store_unavailable:
    case ErrorCode::store_timeout:
    case ErrorCode::store_error:
      throw StoreError(error.code(), error.what());
    case ErrorCode::invalid_argument:
      throw InvalidArgument(error.what());
    case ErrorCode::internal:
      break;
  }
  throw Error(error.code(), error.what());
}

Decision Store::decide(const StoreCall& call) {
  check_may_wait("call");
  SyncWait<Decision> wait;
  run_and_wait(wait, [&] { decide_async(call, [&wait](const Decision* d, const Error* e) { wait.complete(d, e); }); });
  return wait.wait();
}

void Store::reset(const std::string* keys, size_t count, std::string_view tag) {
  check_may_wait("reset");
  SyncWait<bool> wait;
  run_and_wait(wait, [&] {
    reset_async(keys, count, tag, [&wait](const Error* e) {
      const bool ok = true;
      wait.complete(e == nullptr ? &ok : nullptr, e);
    });
  });
  wait.wait();
}

void Store::decide_many(const StoreCall* calls, size_t n, Decision* out, std::optional<StoreError>* errors) {
  if (n == 0) return;
  check_may_wait("call");
  SyncWait<bool> wait;
  run_and_wait(wait, [&] {
    decide_many_async(calls, n, [&](const Decision* decisions, const std::optional<StoreError>* errs) {
      for (size_t i = 0; i < n; ++i) {
        if (errs[i])
          errors[i] = errs[i];
        else
          out[i] = decisions[i];
      }
      const bool ok = true;
      wait.complete(&ok, nullptr);
    });
  });
  wait.wait();
}

bool Store::decide_now(const StoreCall&, Decision&) { return false; }

void Store::read_resets_async(int64_t, ResetLogCallback done) {
  const InvalidArgument e(describe() + " keeps no log of resets");
  done(nullptr, &e);
}

void Store::check() {
  check_may_wait("check");
  SyncWait<bool> wait;
  run_and_wait(wait, [&] {
    check_async([&wait](const Error* e) {
      const bool ok = true;
      wait.complete(e == nullptr ? &ok : nullptr, e);
    });
  });
  wait.wait();
}

namespace {

// The answers of a batch of independent calls, gathered until the last one arrives.
struct Gather {
  explicit Gather(size_t n, DecisionsCallback cb) : left(n), decisions(n), errors(n), done(std::move(cb)) {}
  std::atomic<size_t> left;
  std::vector<Decision> decisions;
  std::vector<std::optional<StoreError>> errors;
  DecisionsCallback done;

  void arrive(size_t i, const Decision* d, const Error* e) {
    if (d != nullptr)
      decisions[i] = *d;
    else
      errors[i] = StoreError(e->code(), e->what());
    if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      done(decisions.data(), errors.data());
      delete this;
    }
  }
};

}  // namespace

void Store::decide_many_async(const StoreCall* calls, size_t n, DecisionsCallback done) {
  if (n == 0) {
    done(nullptr, nullptr);
    return;
  }
  auto* gather = new Gather(n, std::move(done));
  for (size_t i = 0; i < n; ++i)
    decide_async(calls[i], [gather, i](const Decision* d, const Error* e) { gather->arrive(i, d, e); });
}

void InProcessStore::decide_async(const StoreCall& call, DecisionCallback done) {
  Decision d;
  try {
    d = decide(call);
  } catch (const Error& e) {
    done(nullptr, &e);
    return;
  }
  done(&d, nullptr);
}

void InProcessStore::reset_async(const std::string* keys, size_t count, std::string_view tag, DoneCallback done) {
  try {
    reset(keys, count, tag);
  } catch (const Error& e) {
    done(&e);
    return;
  }
  done(nullptr);
}

void validate_key_prefix(const std::string& prefix) {
  if (prefix.empty() || prefix.size() > 256)
    throw InvalidArgument("prefix must be 1 to 256 bytes, got " + std::to_string(prefix.size()));
  if (prefix.find_first_of("{}") != std::string::npos)
    throw InvalidArgument("prefix \"" + prefix + "\" must not contain '{' or '}' (they mark the cluster hash tag)");
}

void Store::set_key_prefix(std::string prefix) {
  validate_key_prefix(prefix);
  key_prefix_ = std::move(prefix);
}

StoreStats Store::stats() const {
  StoreStats s;
  s.name = describe();
  return s;
}

}  // namespace ratewarden
