#include "completions.hpp"

#include <napi.h>

#include <cstring>
#include <utility>

#include "convert.hpp"
#include "errors.hpp"

namespace rwnode {

Completions::Completions(napi_env env) : env_(env), state_(std::make_shared<State>()) {
  napi_value name;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_string_utf8(env, "ratewarden", NAPI_AUTO_LENGTH, &name));
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, nullptr, nullptr,
                                                                 this, &Completions::drain, &state_->wake));
  NAPI_THROW_IF_FAILED_VOID(env, napi_unref_threadsafe_function(env, state_->wake));
  // Cleanup hooks run in reverse order of registration: this one runs before the thread-safe function's own.
  NAPI_THROW_IF_FAILED_VOID(env, napi_add_env_cleanup_hook(env, &Completions::close, state_.get()));
}

// With the addon's instance data, when the environment is torn down (after the cleanup hooks).
Completions::~Completions() {
  close(state_.get());
  if (handler_ != nullptr) napi_delete_reference(env_, handler_);
}

void Completions::set_handler(napi_env env, napi_value handler) {
  napi_ref ref;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_reference(env, handler, 1, &ref));
  if (handler_ != nullptr) napi_delete_reference(env, handler_);
  handler_ = ref;
}

void Completions::close(void* state) noexcept {
  auto* s = static_cast<State*>(state);
  std::vector<Answer> dropped;
  std::lock_guard<std::mutex> lock(s->mu);
  s->closed = true;
  s->answers.swap(dropped);
}

void Completions::State::push(Answer&& answer) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu);
    if (closed) return;  // the environment is gone: the answer is dropped, no N-API call
    answers.push_back(std::move(answer));
    if (answers.size() == 1) napi_call_threadsafe_function(wake, nullptr, napi_tsfn_nonblocking);
  } catch (...) {
    // Out of memory: this call never settles. Nothing else can be done on this thread.
  }
}

ratewarden::DecisionCallback Completions::on_decision(uint32_t id) const {
  return [state = state_, id](const ratewarden::Decision* d, const ratewarden::Error* e) {
    Answer a;
    a.id = id;
    if (d != nullptr) {
      a.kind = kDecision;
      a.decision = *d;
    } else {
      a.kind = kError;
      a.code = e->code();
      a.message = e->what();
    }
    state->push(std::move(a));
  };
}

ratewarden::DoneCallback Completions::on_done(uint32_t id) const {
  return [state = state_, id](const ratewarden::Error* e) {
    Answer a;
    a.id = id;
    a.kind = kDone;
    if (e != nullptr) {
      a.kind = kError;
      a.code = e->code();
      a.message = e->what();
    }
    state->push(std::move(a));
  };
}

ratewarden::Limiter::ManyCallback Completions::on_decisions(uint32_t id) const {
  return [state = state_, id](const std::vector<ratewarden::Decision>* decisions, const ratewarden::Error* e) {
    Answer a;
    a.id = id;
    if (decisions != nullptr) {
      a.kind = kDecisions;
      a.many = *decisions;
    } else {
      a.kind = kError;
      a.code = e->code();
      a.message = e->what();
    }
    state->push(std::move(a));
  };
}

void Completions::started(napi_env env) {
  if (in_flight_++ == 0) napi_ref_threadsafe_function(env, state_->wake);
}

// The thread-safe function's call_js, on the loop thread. `env` is null when Node empties the function's queue at
// teardown: then `context` may be gone and nothing is touched.
void Completions::drain(napi_env env, napi_value, void* context, void*) noexcept {
  if (env == nullptr || context == nullptr) return;
  auto* self = static_cast<Completions*>(context);
  try {
    {
      std::lock_guard<std::mutex> lock(self->state_->mu);
      if (self->state_->closed) return;
      self->batch_.swap(self->state_->answers);
    }
    if (self->batch_.empty()) return;
    self->in_flight_ -= std::min(self->in_flight_, self->batch_.size());
    if (self->in_flight_ == 0) napi_unref_threadsafe_function(env, self->state_->wake);
    self->deliver(env, self->batch_);
  } catch (...) {
  }
  self->batch_.clear();
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
      double* record = values + i * kRecord;
      record[0] = a.id;
      record[1] = a.kind;
      if (a.kind == kDecision) write_decision(a.decision, record + 2);
      else std::memset(record + 2, 0, kDecisionFields * sizeof(double));
      if (a.kind != kError && a.kind != kDecisions) continue;
      napi_valuetype type;
      if (napi_typeof(env, argv[1], &type) != napi_ok) return;
      if (type == napi_null && napi_create_array_with_length(env, batch.size(), &argv[1]) != napi_ok) return;
      napi_value extra = nullptr;
      if (a.kind == kError) {
        extra = js_error(env, a.code, a.message);
      } else {
        double* out = nullptr;
        extra = float64_array(env, a.many.size() * kDecisionFields, &out);
        if (extra != nullptr)
          for (size_t j = 0; j < a.many.size(); ++j) write_decision(a.many[j], out + j * kDecisionFields);
      }
      if (extra == nullptr || napi_set_element(env, argv[1], static_cast<uint32_t>(i), extra) != napi_ok) return;
    }
    napi_value handler, recv;
    if (napi_get_reference_value(env, handler_, &handler) != napi_ok || handler == nullptr ||
        napi_get_undefined(env, &recv) != napi_ok)
      return;
    // A pending exception (the handler threw: a bug) is reported by Node as uncaught once this returns.
    napi_call_function(env, recv, handler, 2, argv, nullptr);
  }();
  napi_close_handle_scope(env, scope);
}

}  // namespace rwnode
