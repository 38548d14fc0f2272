#include "completions.hpp"

#include <napi.h>

#include <cstring>
#include <utility>

#include "convert.hpp"
#include "errors.hpp"

namespace rwnode {

Completions::Completions(napi_env env) : env_(env) {
  napi_value name;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_string_utf8(env, "ratewarden", NAPI_AUTO_LENGTH, &name));
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, nullptr, nullptr,
                                                                 this, &Completions::drain, &wake_));
  NAPI_THROW_IF_FAILED_VOID(env, napi_unref_threadsafe_function(env, wake_));
  queue_ = std::make_shared<Queue>(
      [wake = wake_] { napi_call_threadsafe_function(wake, nullptr, napi_tsfn_nonblocking); },
      nullptr);  // an answer after the environment is gone is dropped: JS knew its call by an id only
  // Cleanup hooks run in reverse order of registration: this one runs before the thread-safe function's own.
  NAPI_THROW_IF_FAILED_VOID(env, napi_add_env_cleanup_hook(env, &Completions::close, queue_.get()));
}

// With the addon's instance data, when the environment is torn down (after the cleanup hooks).
Completions::~Completions() {
  close(queue_.get());
  if (handler_ != nullptr) napi_delete_reference(env_, handler_);
  if (later_ != nullptr) napi_delete_reference(env_, later_);
}

void Completions::set_handler(napi_env env, napi_value handler, napi_value later) {
  napi_ref refs[2];
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_reference(env, handler, 1, &refs[0]));
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_reference(env, later, 1, &refs[1]));
  if (handler_ != nullptr) napi_delete_reference(env, handler_);
  if (later_ != nullptr) napi_delete_reference(env, later_);
  handler_ = refs[0];
  later_ = refs[1];
}

void Completions::close(void* queue) noexcept {
  try {
    static_cast<Queue*>(queue)->close();  // the answers waiting are dropped as plain data
  } catch (...) {
  }
}

ratewarden::DecisionCallback Completions::on_decision(uint32_t id, uint8_t kind) const {
  return Queue::on_decision(queue_, Call{id, kind});
}

ratewarden::DoneCallback Completions::on_done(uint32_t id) const { return Queue::on_done(queue_, Call{id, kDone}); }

ratewarden::Limiter::ManyCallback Completions::on_decisions(uint32_t id) const {
  return Queue::on_decisions(queue_, Call{id, kDecisions});
}

void Completions::started(napi_env env) {
  if (in_flight_++ == 0) napi_ref_threadsafe_function(env, wake_);
}

// The thread-safe function's call_js, on the loop thread. `env` is null when Node empties the function's queue at
// teardown: then `context` may be gone and nothing is touched.
void Completions::drain(napi_env env, napi_value, void* context, void*) noexcept {
  if (env == nullptr || context == nullptr) return;
  static_cast<Completions*>(context)->drain_now(env);
}

void Completions::drain_now(napi_env env) noexcept {
  try {
    queue_->take(batch_, false);  // unarmed: answers arriving meanwhile wait for the next turn
    if (!batch_.empty()) {
      in_flight_ -= std::min(in_flight_, batch_.size());
      if (in_flight_ == 0) napi_unref_threadsafe_function(env, wake_);
      deliver(env, batch_);
    }
    batch_.clear();
    // More answers came while this batch was delivered: the next turn of the loop takes them (setImmediate).
    // Else the next answer wakes the loop.
    if (queue_->rearm_if_empty() && !call(env, later_, 0, nullptr)) {
      // JS cannot run (the environment is going away): the thread-safe function is the only way left.
      napi_call_threadsafe_function(wake_, nullptr, napi_tsfn_nonblocking);
    }
  } catch (...) {
    batch_.clear();
  }
}

// Calls a JS function of the addon's; false when it could not be called.
bool Completions::call(napi_env env, napi_ref function, size_t argc, napi_value* argv) noexcept {
  napi_value fn, recv;
  if (function == nullptr || napi_get_reference_value(env, function, &fn) != napi_ok || fn == nullptr ||
      napi_get_undefined(env, &recv) != napi_ok)
    return false;
  // A pending exception (the function threw: a bug) is reported by Node as uncaught once the callback returns.
  return napi_call_function(env, recv, fn, argc, argv, nullptr) == napi_ok;
}

namespace {

napi_value js_error(napi_env env, ratewarden::ErrorCode code, const std::string& message) {
  napi_value js_code, js_message, error;
  if (napi_create_string_utf8(env, error_code(code), NAPI_AUTO_LENGTH, &js_code) != napi_ok ||
      napi_create_string_utf8(env, message.data(), message.size(), &js_message) != napi_ok ||
      napi_create_error(env, js_code, js_message, &error) != napi_ok)
    return nullptr;
  return error;
}

// One answer as JS reads it (node/lib/calls.js): id, kind, then a decision's fields.
constexpr size_t kRecord = 2 + kDecisionFields;

napi_value float64_array(napi_env env, size_t length, double** data) {
  napi_value buffer, array;
  void* bytes = nullptr;
  if (napi_create_arraybuffer(env, length * sizeof(double), &bytes, &buffer) != napi_ok ||
      napi_create_typedarray(env, napi_float64_array, length, buffer, 0, &array) != napi_ok)
    return nullptr;
  *data = static_cast<double*>(bytes);
  return array;
}

}  // namespace

// One call of the JS handler for the whole batch. Any N-API failure (the environment is being torn down) ends it
// quietly: those calls' promises are never settled, and nobody is left to wait for them.
void Completions::deliver(napi_env env, std::vector<Answer>& batch) noexcept {
  if (handler_ == nullptr) return;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  [&] {
    double* values = nullptr;
    napi_value argv[2];
    argv[0] = float64_array(env, batch.size() * kRecord, &values);
    if (argv[0] == nullptr || napi_get_null(env, &argv[1]) != napi_ok) return;
    for (size_t i = 0; i < batch.size(); ++i) {
      const Answer& a = batch[i];
      const uint8_t kind = a.error ? static_cast<uint8_t>(kError) : a.token.kind;
      double* record = values + i * kRecord;
      record[0] = a.token.id;
      record[1] = kind;
      if (kind == kDecision || kind == kReservation) write_decision(a.decision, record + 2);
      else std::memset(record + 2, 0, kDecisionFields * sizeof(double));
      if (kind != kError && kind != kDecisions) continue;
      napi_valuetype type;
      if (napi_typeof(env, argv[1], &type) != napi_ok) return;
      if (type == napi_null && napi_create_array_with_length(env, batch.size(), &argv[1]) != napi_ok) return;
      napi_value extra = nullptr;
      if (kind == kError) {
        extra = js_error(env, *a.error, a.message);
      } else {
        double* out = nullptr;
        extra = float64_array(env, a.decisions.size() * kDecisionFields, &out);
        if (extra != nullptr)
          for (size_t j = 0; j < a.decisions.size(); ++j) write_decision(a.decisions[j], out + j * kDecisionFields);
      }
      if (extra == nullptr || napi_set_element(env, argv[1], static_cast<uint32_t>(i), extra) != napi_ok) return;
    }
    call(env, handler_, 2, argv);
  }();
  napi_close_handle_scope(env, scope);
}

}  // namespace rwnode
