#include "loop_queue.hpp"

#include <optional>

#include "executor.hpp"

namespace rwnode {

LoopQueue::LoopQueue(Napi::Env env) : env_(env), finished_(std::make_shared<Finished>()) {
  napi_value name;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_string_utf8(env, "ratewarden", NAPI_AUTO_LENGTH, &name));
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, nullptr, nullptr,
                                                                 this, &LoopQueue::drain, &finished_->wake));
  NAPI_THROW_IF_FAILED_VOID(env, napi_unref_threadsafe_function(env, finished_->wake));
  // Cleanup hooks run in reverse order of registration: this one runs before the function's own.
  NAPI_THROW_IF_FAILED_VOID(env, napi_add_env_cleanup_hook(env, &LoopQueue::close, finished_.get()));
}

LoopQueue::~LoopQueue() { close(finished_.get()); }

void LoopQueue::close(void* finished) {
  auto* f = static_cast<Finished*>(finished);
  std::lock_guard<std::mutex> lock(f->mu);
  f->closed = true;
  for (auto& job : f->jobs) job->abandon();
  f->jobs.clear();
}

void LoopQueue::submit(std::unique_ptr<Job> job) {
  if (in_flight_++ == 0) napi_ref_threadsafe_function(env_, finished_->wake);
  std::shared_ptr<Finished> finished = finished_;
  // std::function needs a copyable task: the job travels as a shared_ptr and is moved out once done.
  auto shared = std::make_shared<std::unique_ptr<Job>>(std::move(job));
  ratewarden::run_on_pool([finished, shared] {
    (*shared)->run();
    finished->push(std::move(*shared));
  });
}

void LoopQueue::Finished::push(std::unique_ptr<Job> job) {
  std::unique_lock<std::mutex> lock(mu);
  if (closed) {
    job->abandon();
    return;
  }
  jobs.push_back(std::move(job));
  if (jobs.size() == 1) napi_call_threadsafe_function(wake, nullptr, napi_tsfn_nonblocking);
}

void LoopQueue::drain(napi_env env, napi_value, void* context, void*) {
  if (env == nullptr) return;  // the environment is going away; ~LoopQueue abandons what is left
  auto* self = static_cast<LoopQueue*>(context);
  std::vector<std::unique_ptr<Job>> jobs;
  {
    std::lock_guard<std::mutex> lock(self->finished_->mu);
    jobs.swap(self->finished_->jobs);
  }
  self->in_flight_ -= jobs.size();
  if (self->in_flight_ == 0) napi_unref_threadsafe_function(env, self->finished_->wake);
  // A callback that throws must not stop the others: the first exception is rethrown once all have run.
  std::optional<Napi::Error> first_error;
  for (auto& job : jobs) {
    Napi::HandleScope scope(env);
    try {
      job->complete(Napi::Env(env));
    } catch (const Napi::Error& e) {
      if (!first_error) first_error = e;
    }
  }
  if (first_error) first_error->ThrowAsJavaScriptException();
}

}  // namespace rwnode
