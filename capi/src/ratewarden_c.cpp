// The C ABI: each function forwards to the C++ core and turns every exception into a status code.
#include "ratewarden.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "ratewarden/ratewarden.hpp"

struct rw_store_t {
  std::shared_ptr<ratewarden::Store> rep;
};

struct rw_options_t {
  std::string algorithm = "fixed_window";
  std::optional<int64_t> burst;
  std::optional<int32_t> buckets;
  std::optional<std::string> prefix;
  std::string on_store_error = "raise";
  std::optional<std::string> name;
  // The first misuse a setter saw: setters return void, so rw_limiter_create reports it (static text).
  int status = RW_OK;
  const char* error = nullptr;
};

struct rw_limiter_t {
  std::shared_ptr<ratewarden::Limiter> rep;
};

struct rw_key_list_t {
  ratewarden::KeyList rep;
};

namespace {

using ratewarden::ErrorCode;

int status_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return RW_ERR_INVALID_ARGUMENT;
    case ErrorCode::store_unavailable: return RW_ERR_STORE_UNAVAILABLE;
    case ErrorCode::store_timeout: return RW_ERR_STORE_TIMEOUT;
    case ErrorCode::store_error: return RW_ERR_STORE;
    case ErrorCode::internal: return RW_ERR_INTERNAL;
  }
  return RW_ERR_INTERNAL;
}

char* copy_message(const char* text) {
  const size_t n = std::strlen(text) + 1;
  char* out = static_cast<char*>(std::malloc(n));
  if (out != nullptr) std::memcpy(out, text, n);
  return out;
}

// Frees a message left in *errmsg by an earlier failure before storing the new one, as LevelDB's SaveError does.
int fail(char** errmsg, int status, const char* message) {
  if (errmsg != nullptr) {
    std::free(*errmsg);
    *errmsg = copy_message(message);
  }
  return status;
}

// Runs `body` and maps what it throws to a status (and a message in *errmsg).
template <class Body>
int guarded(char** errmsg, Body&& body) {
  try {
    body();
    return RW_OK;
  } catch (const ratewarden::Error& e) {
    return fail(errmsg, status_of(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return fail(errmsg, RW_ERR_NOMEM, "out of memory");
  } catch (const std::exception& e) {
    return fail(errmsg, RW_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(errmsg, RW_ERR_INTERNAL, "unknown error");
  }
}

int null_argument(char** errmsg, const char* what) {
  char message[64];  // no std::string: this runs outside `guarded`, where nothing may throw
  std::snprintf(message, sizeof message, "%s is NULL", what);
  return fail(errmsg, RW_ERR_INVALID_ARGUMENT, message);
}

// What rw_options_create returns when out of memory: its setters do nothing, rw_limiter_create fails with its error.
rw_options_t out_of_memory_options = [] {
  rw_options_t options;
  options.status = RW_ERR_NOMEM;
  options.error = "out of memory";
  return options;
}();

void record(rw_options_t* options, int status, const char* error) {
  if (options->status != RW_OK) return;
  options->status = status;
  options->error = error;
}

bool writable(const rw_options_t* options) { return options != nullptr && options != &out_of_memory_options; }

// Copies a setter's string into `field`, recording a NULL value (`null_error`) or a failed copy instead.
template <class Field>
void set_string(rw_options_t* options, Field rw_options_t::*field, const char* value, const char* null_error) {
  if (!writable(options)) return;
  if (value == nullptr) return record(options, RW_ERR_INVALID_ARGUMENT, null_error);
  try {
    options->*field = value;
  } catch (const std::bad_alloc&) {
    record(options, RW_ERR_NOMEM, "out of memory");
  }
}

// Keys cross as pointer + length; a NULL pointer is only a valid empty key, which the core rejects by its length.
bool bad_key(const char* key, size_t keylen) { return key == nullptr && keylen != 0; }

void to_c(const ratewarden::Decision& d, rw_decision_t* out) {
  out->allowed = d.allowed ? 1 : 0;
  out->limit = d.limit;
  out->remaining = d.remaining;
  out->reset_after_us = d.reset_after_us;
  out->retry_after_us = d.retry_after_us;
  out->used = d.used;
}

void to_c(const ratewarden::Decision& d, rw_decision_v2_t* out) {
  out->allowed = d.allowed ? 1 : 0;
  out->limit = d.limit;
  out->remaining = d.remaining;
  out->reset_after_us = d.reset_after_us;
  out->retry_after_us = d.retry_after_us;
  out->used = d.used;
  out->policy_index = d.policy_index;
}

void to_c(const ratewarden::Decision& d, rw_reservation_t* out) {
  to_c(d, &out->decision);
  out->wait_us = d.wait_us;
  out->ticket = d.ticket;
}

// The body of rw_hit / rw_peek and their _v2 forms: `Out` is rw_decision_t or rw_decision_v2_t.
template <class Out>
int decide(rw_limiter_t* limiter, const char* key, size_t keylen, int64_t cost, Out* decision, char** errmsg,
           ratewarden::Mode mode) {
  if (limiter == nullptr) return null_argument(errmsg, "limiter");
  if (decision == nullptr) return null_argument(errmsg, "decision");
  if (bad_key(key, keylen)) return null_argument(errmsg, "key");
  return guarded(errmsg, [&] {
    std::string_view k(key == nullptr ? "" : key, keylen);
    to_c(mode == ratewarden::Mode::hit    ? limiter->rep->hit(k, cost)
         : mode == ratewarden::Mode::peek ? limiter->rep->peek(k, cost)
                                          : limiter->rep->refund(k, cost),
         decision);
  });
}

// RW_ERR_INVALID_ARGUMENT naming the first key a batch cannot take (checked before anything is charged), else RW_OK.
int check_keys(const char* const* keys, const size_t* keylens, size_t n, char** errmsg) {
  for (size_t i = 0; i < n; ++i) {
    if (!bad_key(keys[i], keylens[i])) continue;
    char what[32];
    std::snprintf(what, sizeof what, "keys[%zu]", i);
    return null_argument(errmsg, what);
  }
  return RW_OK;
}

std::vector<std::string_view> key_views(const char* const* keys, const size_t* keylens, size_t n) {
  std::vector<std::string_view> views;
  views.reserve(n);
  for (size_t i = 0; i < n; ++i) views.emplace_back(keys[i] == nullptr ? "" : keys[i], keylens[i]);
  return views;
}

template <class Out>
int hit_many(rw_limiter_t* limiter, const char* const* keys, const size_t* keylens, size_t n, int64_t cost,
             Out* decisions, char** errmsg) {
  if (limiter == nullptr) return null_argument(errmsg, "limiter");
  if (n > 0 && (keys == nullptr || keylens == nullptr || decisions == nullptr))
    return null_argument(errmsg, keys == nullptr ? "keys" : keylens == nullptr ? "keylens" : "decisions");
  if (int status = check_keys(keys, keylens, n, errmsg)) return status;
  return guarded(errmsg, [&] {
    const std::vector<std::string_view> views = key_views(keys, keylens, n);
    std::vector<ratewarden::Decision> out = limiter->rep->hit_many(views, cost);
    for (size_t i = 0; i < n; ++i) to_c(out[i], &decisions[i]);
  });
}

// A callback for the core's asynchronous calls: on the library's callback thread (Completion::library_thread).
// `Out` is rw_decision_t (rw_hit_callback) or rw_decision_v2_t (rw_hit_v2_callback).
template <class Out>
ratewarden::DecisionCallback decision_callback(void (*callback)(void*, int, const Out*, const char*),
                                               void* user_data) {
  return [callback, user_data](const ratewarden::Decision* d, const ratewarden::Error* e) {
    if (d != nullptr) {
      Out out;
      to_c(*d, &out);
      callback(user_data, RW_OK, &out, nullptr);
    } else {
      callback(user_data, status_of(e->code()), nullptr, e->what());
    }
  };
}

// The body of rw_hit_async / rw_peek_async and their _v2 forms.
template <class Out>
int decide_async(rw_limiter_t* limiter, const char* key, size_t keylen, int64_t cost,
                 void (*callback)(void*, int, const Out*, const char*), void* user_data, char** errmsg,
                 ratewarden::Mode mode) {
  if (limiter == nullptr) return null_argument(errmsg, "limiter");
  if (callback == nullptr) return null_argument(errmsg, "callback");
  if (bad_key(key, keylen)) return null_argument(errmsg, "key");
  return guarded(errmsg, [&] {
    std::string_view k(key == nullptr ? "" : key, keylen);
    if (mode == ratewarden::Mode::hit)
      limiter->rep->hit_async(k, cost, decision_callback(callback, user_data));
    else if (mode == ratewarden::Mode::peek)
      limiter->rep->peek_async(k, cost, decision_callback(callback, user_data));
    else
      limiter->rep->refund_async(k, cost, decision_callback(callback, user_data));
  });
}

// The body of rw_hit_many_async and rw_hit_many_async_v2.
template <class Out>
int hit_many_async(rw_limiter_t* limiter, const char* const* keys, const size_t* keylens, size_t n, int64_t cost,
                   void (*callback)(void*, int, const Out*, size_t, const char*), void* user_data, char** errmsg) {
  if (limiter == nullptr) return null_argument(errmsg, "limiter");
  if (callback == nullptr) return null_argument(errmsg, "callback");
  if (n > 0 && (keys == nullptr || keylens == nullptr))
    return null_argument(errmsg, keys == nullptr ? "keys" : "keylens");
  if (int status = check_keys(keys, keylens, n, errmsg)) return status;
  return guarded(errmsg, [&] {
    const std::vector<std::string_view> views = key_views(keys, keylens, n);
    limiter->rep->hit_many_async(
        views, cost, [callback, user_data](const std::vector<ratewarden::Decision>* d, const ratewarden::Error* e) {
          if (d == nullptr) {
            callback(user_data, status_of(e->code()), nullptr, 0, e->what());
            return;
          }
          std::vector<Out> out(d->size());
          for (size_t i = 0; i < d->size(); ++i) to_c((*d)[i], &out[i]);
          callback(user_data, RW_OK, out.data(), out.size(), nullptr);
        });
  });
}

}  // namespace

extern "C" {

int rw_version_number(void) { return RW_VERSION_NUMBER; }

const char* rw_version(void) { return ratewarden::version(); }

const char* rw_status_str(int status) {
  switch (status) {
    case RW_OK: return "ok";
    case RW_ERR_INVALID_ARGUMENT: return "invalid argument";
    case RW_ERR_STORE_UNAVAILABLE: return "store unavailable";
    case RW_ERR_STORE_TIMEOUT: return "store timeout";
    case RW_ERR_STORE: return "store error";
    case RW_ERR_NOMEM: return "out of memory";
    case RW_ERR_INTERNAL: return "internal error";
    default: return "unknown status";
  }
}

void rw_free(void* ptr) { std::free(ptr); }

int rw_store_open(const char* url, rw_store_t** store, char** errmsg) {
  if (url == nullptr) return null_argument(errmsg, "url");
  if (store == nullptr) return null_argument(errmsg, "store");
  return guarded(errmsg, [&] { *store = new rw_store_t{ratewarden::open_store(url)}; });
}

int rw_store_open_shared(const char* url, rw_store_t** store, char** errmsg) {
  if (url == nullptr) return null_argument(errmsg, "url");
  if (store == nullptr) return null_argument(errmsg, "store");
  return guarded(errmsg, [&] { *store = new rw_store_t{ratewarden::open_shared_store(url)}; });
}

int rw_store_open_with_clock(const char* url, rw_clock_fn now_us, void* user_data, rw_store_t** store,
                             char** errmsg) {
  if (url == nullptr) return null_argument(errmsg, "url");
  if (now_us == nullptr) return null_argument(errmsg, "now_us");
  if (store == nullptr) return null_argument(errmsg, "store");
  return guarded(errmsg, [&] {
    *store = new rw_store_t{ratewarden::open_store(url, [now_us, user_data] { return now_us(user_data); })};
  });
}

void rw_store_close(rw_store_t* store) { delete store; }

int rw_store_stats(const rw_store_t* store, rw_store_stats_t* stats, char** errmsg) {
  if (store == nullptr) return null_argument(errmsg, "store");
  if (stats == nullptr) return null_argument(errmsg, "stats");
  return guarded(errmsg, [&] {
    const ratewarden::StoreStats s = store->rep->stats();
    *stats = rw_store_stats_t{s.keys, s.max_keys, s.evictions};
  });
}

int rw_store_sync_stats(const rw_store_t* store, rw_sync_stats_t* stats, char** errmsg) {
  if (store == nullptr) return null_argument(errmsg, "store");
  if (stats == nullptr) return null_argument(errmsg, "stats");
  return guarded(errmsg, [&] {
    const ratewarden::StoreStats s = store->rep->stats();
    *stats = rw_sync_stats_t{s.local_denials, s.local_allows, s.store_calls, s.sync_batches, s.sync_lag_us,
                             s.invalidations};
  });
}

rw_options_t* rw_options_create(void) {
  rw_options_t* options = new (std::nothrow) rw_options_t;
  return options != nullptr ? options : &out_of_memory_options;
}

void rw_options_destroy(rw_options_t* options) {
  if (options != &out_of_memory_options) delete options;
}

void rw_options_set_algorithm(rw_options_t* options, const char* algorithm) {
  set_string(options, &rw_options_t::algorithm, algorithm, "rw_options_set_algorithm: algorithm is NULL");
}

void rw_options_set_burst(rw_options_t* options, int64_t burst) {
  if (writable(options)) options->burst = burst;
}

void rw_options_set_buckets(rw_options_t* options, int32_t buckets) {
  if (writable(options)) options->buckets = buckets;
}

void rw_options_set_prefix(rw_options_t* options, const char* prefix) {
  set_string(options, &rw_options_t::prefix, prefix, "rw_options_set_prefix: prefix is NULL");
}

void rw_options_set_on_store_error(rw_options_t* options, const char* on_store_error) {
  set_string(options, &rw_options_t::on_store_error, on_store_error,
             "rw_options_set_on_store_error: on_store_error is NULL");
}

void rw_options_set_name(rw_options_t* options, const char* name) {
  set_string(options, &rw_options_t::name, name, "rw_options_set_name: name is NULL");
}

int rw_limiter_create(rw_store_t* store, const char* policy, const rw_options_t* options, rw_limiter_t** limiter,
                      char** errmsg) {
  if (store == nullptr) return null_argument(errmsg, "store");
  if (policy == nullptr) return null_argument(errmsg, "policy");
  if (limiter == nullptr) return null_argument(errmsg, "limiter");
  if (options != nullptr && options->status != RW_OK) return fail(errmsg, options->status, options->error);
  return guarded(errmsg, [&] {
    const rw_options_t defaults;
    const rw_options_t& o = options != nullptr ? *options : defaults;
    ratewarden::LimiterOptions lo;
    lo.algorithm = ratewarden::parse_algorithm(o.algorithm);
    lo.burst = o.burst;
    lo.buckets = o.buckets;
    lo.prefix = o.prefix;
    lo.on_store_error = ratewarden::parse_on_store_error(o.on_store_error);
    lo.name = o.name;
    *limiter = new rw_limiter_t{std::make_shared<ratewarden::Limiter>(policy, store->rep, lo)};
  });
}

void rw_limiter_destroy(rw_limiter_t* limiter) { delete limiter; }

int rw_hit(rw_limiter_t* limiter, const char* key, size_t keylen, int64_t cost, rw_decision_t* decision,
           char** errmsg) {
  return decide(limiter, key, keylen, cost, decision, errmsg, ratewarden::Mode::hit);
}

int rw_peek(rw_limiter_t* limiter, const char* key, size_t keylen, int64_t cost, rw_decision_t* decision,
            char** errmsg) {
  return decide(limiter, key, keylen, cost, decision, errmsg, ratewarden::Mode::peek);
}

int rw_hit_v2(rw_limiter_t* limiter, const char* key, size_t keylen, int64_t cost, rw_decision_v2_t* decision,
              char** errmsg) {
  return decide(limiter, key, keylen, cost, decision, errmsg, ratewarden::Mode::hit);
}

int rw_peek_v2(rw_limiter_t* limiter, const char* key, size_t keylen, int64_t cost, rw_decision_v2_t* decision,
               char** errmsg) {
  return decide(limiter, key, keylen, cost, decision, errmsg, ratewarden::Mode::peek);
}

int rw_reset(rw_limiter_t* limiter, const char* key, size_t keylen, char** errmsg) {
  if (limiter == nullptr) return null_argument(errmsg, "limiter");
  if (bad_key(key, keylen)) return null_argument(errmsg, "key");
  return guarded(errmsg, [&] { limiter->rep->reset(std::string_view(key == nullptr ? "" : key, keylen)); });
}

int rw_hit_many(rw_limiter_t* limiter, const char* const* keys, const size_t* keylens, size_t n, int64_t cost,
                rw_decision_t* decisions, char** errmsg) {
  return hit_many(limiter, keys, keylens, n, cost, decisions, errmsg);
}

int rw_hit_many_v2(rw_limiter_t* limiter, const char* const* keys, const size_t* keylens, size_t n, int64_t cost,
                   rw_decision_v2_t* decisions, char** errmsg) {
  return hit_many(limiter, keys, keylens, n, cost, decisions, errmsg);
}

int rw_hit_async(rw_limiter_t* limiter, const char* key, size_t keylen, int64_t cost, rw_hit_callback callback,
                 void* user_data, char** errmsg) {
  return decide_async(limiter, key, keylen, cost, callback, user_data, errmsg, ratewarden::Mode::hit);
}

int rw_peek_async(rw_limiter_t* limiter, const char* key, size_t keylen, int64_t cost, rw_hit_callback callback,
                  void* user_data, char** errmsg) {
  return decide_async(limiter, key, keylen, cost, callback, user_data, errmsg, ratewarden::Mode::peek);
}

int rw_hit_async_v2(rw_limiter_t* limiter, const char* key, size_t keylen, int64_t cost, rw_hit_v2_callback callback,
                    void* user_data, char** errmsg) {
  return decide_async(limiter, key, keylen, cost, callback, user_data, errmsg, ratewarden::Mode::hit);
}

int rw_peek_async_v2(rw_limiter_t* limiter, const char* key, size_t keylen, int64_t cost,
                     rw_hit_v2_callback callback, void* user_data, char** errmsg) {
  return decide_async(limiter, key, keylen, cost, callback, user_data, errmsg, ratewarden::Mode::peek);
}

int rw_reset_async(rw_limiter_t* limiter, const char* key, size_t keylen, rw_done_callback callback, void* user_data,
                   char** errmsg) {
  if (limiter == nullptr) return null_argument(errmsg, "limiter");
  if (callback == nullptr) return null_argument(errmsg, "callback");
  if (bad_key(key, keylen)) return null_argument(errmsg, "key");
  return guarded(errmsg, [&] {
    limiter->rep->reset_async(std::string_view(key == nullptr ? "" : key, keylen),
                              [callback, user_data](const ratewarden::Error* e) {
                                if (e == nullptr)
                                  callback(user_data, RW_OK, nullptr);
                                else
                                  callback(user_data, status_of(e->code()), e->what());
                              });
  });
}

int rw_hit_many_async(rw_limiter_t* limiter, const char* const* keys, const size_t* keylens, size_t n, int64_t cost,
                      rw_hit_many_callback callback, void* user_data, char** errmsg) {
  return hit_many_async(limiter, keys, keylens, n, cost, callback, user_data, errmsg);
}

int rw_hit_many_async_v2(rw_limiter_t* limiter, const char* const* keys, const size_t* keylens, size_t n,
                         int64_t cost, rw_hit_many_v2_callback callback, void* user_data, char** errmsg) {
  return hit_many_async(limiter, keys, keylens, n, cost, callback, user_data, errmsg);
}

}  // extern "C"

int rw_reserve(rw_limiter_t* limiter, const char* key, size_t keylen, int64_t cost, int64_t max_wait_us,
               rw_reservation_t* reservation, char** errmsg) {
  if (limiter == nullptr) return null_argument(errmsg, "limiter");
  if (reservation == nullptr) return null_argument(errmsg, "reservation");
  if (bad_key(key, keylen)) return null_argument(errmsg, "key");
  return guarded(errmsg, [&] {
    to_c(limiter->rep->reserve(std::string_view(key == nullptr ? "" : key, keylen), cost, max_wait_us), reservation);
  });
}

int rw_reserve_async(rw_limiter_t* limiter, const char* key, size_t keylen, int64_t cost, int64_t max_wait_us,
                     rw_reserve_callback callback, void* user_data, char** errmsg) {
  if (limiter == nullptr) return null_argument(errmsg, "limiter");
  if (callback == nullptr) return null_argument(errmsg, "callback");
  if (bad_key(key, keylen)) return null_argument(errmsg, "key");
  return guarded(errmsg, [&] {
    limiter->rep->reserve_async(std::string_view(key == nullptr ? "" : key, keylen), cost, max_wait_us,
                                decision_callback(callback, user_data));
  });
}

int rw_cancel(rw_limiter_t* limiter, const char* key, size_t keylen, int64_t cost, const rw_reservation_t* reservation,
              int* given, char** errmsg) {
  if (limiter == nullptr) return null_argument(errmsg, "limiter");
  if (reservation == nullptr) return null_argument(errmsg, "reservation");
  if (given == nullptr) return null_argument(errmsg, "given");
  if (bad_key(key, keylen)) return null_argument(errmsg, "key");
  return guarded(errmsg, [&] {
    ratewarden::Decision slot;
    slot.allowed = reservation->decision.allowed != 0;
    slot.ticket = reservation->ticket;
    *given = limiter->rep->cancel(std::string_view(key == nullptr ? "" : key, keylen), cost, slot) ? 1 : 0;
  });
}

int rw_refund(rw_limiter_t* limiter, const char* key, size_t keylen, int64_t cost, rw_decision_v2_t* decision,
              char** errmsg) {
  return decide(limiter, key, keylen, cost, decision, errmsg, ratewarden::Mode::refund);
}

int rw_refund_async(rw_limiter_t* limiter, const char* key, size_t keylen, int64_t cost, rw_hit_v2_callback callback,
                    void* user_data, char** errmsg) {
  return decide_async(limiter, key, keylen, cost, callback, user_data, errmsg, ratewarden::Mode::refund);
}

int rw_key_list_create(rw_store_t* store, const char* name, int64_t duration_us, rw_key_list_t** list,
                       char** errmsg) {
  if (store == nullptr) return null_argument(errmsg, "store");
  if (name == nullptr) return null_argument(errmsg, "name");
  if (list == nullptr) return null_argument(errmsg, "list");
  return guarded(errmsg, [&] {
    *list = new rw_key_list_t{
        ratewarden::KeyList(name, store->rep, duration_us == 0 ? ratewarden::KeyList::kMaxDurationUs : duration_us)};
  });
}

void rw_key_list_destroy(rw_key_list_t* list) { delete list; }

int rw_key_list_add(rw_key_list_t* list, const char* key, size_t keylen, char** errmsg) {
  if (list == nullptr) return null_argument(errmsg, "list");
  if (bad_key(key, keylen)) return null_argument(errmsg, "key");
  return guarded(errmsg, [&] { list->rep.add(std::string_view(key == nullptr ? "" : key, keylen)); });
}

int rw_key_list_remove(rw_key_list_t* list, const char* key, size_t keylen, char** errmsg) {
  if (list == nullptr) return null_argument(errmsg, "list");
  if (bad_key(key, keylen)) return null_argument(errmsg, "key");
  return guarded(errmsg, [&] { list->rep.remove(std::string_view(key == nullptr ? "" : key, keylen)); });
}

int rw_key_list_contains(rw_key_list_t* list, const char* key, size_t keylen, int* contains, int64_t* expires_in_us,
                         char** errmsg) {
  if (list == nullptr) return null_argument(errmsg, "list");
  if (bad_key(key, keylen)) return null_argument(errmsg, "key");
  if (contains == nullptr) return null_argument(errmsg, "contains");
  return guarded(errmsg, [&] {
    const int64_t left = list->rep.expires_in_us(std::string_view(key == nullptr ? "" : key, keylen));
    *contains = left > 0 ? 1 : 0;
    if (expires_in_us != nullptr) *expires_in_us = left;
  });
}

// ---- Figures and events

namespace {

// Copies `full` (what this library fills) into the caller's struct, as much of it as the caller's `size` says it
// knows, and tells how much it filled.
template <class Struct>
void fill_sized(Struct* out, const Struct& full) {
  const size_t n = std::min(out->size, sizeof(Struct));
  std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t), reinterpret_cast<const char*>(&full) + sizeof(size_t),
              n > sizeof(size_t) ? n - sizeof(size_t) : 0);
  out->size = std::max(n, sizeof(size_t));
}

static_assert(RW_DURATION_BUCKETS == ratewarden::kDurationBuckets.size() + 1, "rw_store_metrics_t's buckets");
static_assert(RW_CALL_OUTCOMES == ratewarden::kCallOutcomes, "rw_store_metrics_t's outcomes");

}  // namespace

int rw_limiter_metrics(const rw_limiter_t* limiter, rw_limiter_metrics_t* metrics, char** errmsg) {
  if (limiter == nullptr) return null_argument(errmsg, "limiter");
  if (metrics == nullptr) return null_argument(errmsg, "metrics");
  return guarded(errmsg, [&] {
    const ratewarden::LimiterStats s = limiter->rep->stats();
    rw_limiter_metrics_t full{sizeof(rw_limiter_metrics_t), s.allowed, s.denied, s.cost, s.fallbacks};
    fill_sized(metrics, full);
  });
}

const char* rw_limiter_name(const rw_limiter_t* limiter) {
  return limiter == nullptr ? nullptr : limiter->rep->name().c_str();
}

const double* rw_duration_bucket_bounds(void) { return ratewarden::kDurationBuckets.data(); }

int rw_store_metrics(const rw_store_t* store, rw_store_metrics_t* metrics, char** errmsg) {
  if (store == nullptr) return null_argument(errmsg, "store");
  if (metrics == nullptr) return null_argument(errmsg, "metrics");
  return guarded(errmsg, [&] {
    const ratewarden::StoreStats s = store->rep->stats();
    rw_store_metrics_t full{};
    full.size = sizeof(rw_store_metrics_t);
    full.keys = s.keys;
    full.max_keys = s.max_keys;
    full.evictions = s.evictions;
    full.expired_drops = s.expired_drops;
    for (size_t o = 0; o < ratewarden::kCallOutcomes; ++o) {
      full.calls[o] = s.calls[o];
      for (size_t b = 0; b < RW_DURATION_BUCKETS; ++b) full.duration_buckets[o][b] = s.durations[o].buckets[b];
      full.duration_sum_seconds[o] = s.durations[o].sum_seconds;
    }
    full.circuits_open = s.circuits_open;
    full.circuit_openings = s.circuit_openings;
    full.connections_open = s.connections_open;
    full.pool_size = s.pool_size;
    full.sweeps = s.sweeps;
    full.local_denials = s.local_denials;
    full.local_allows = s.local_allows;
    full.store_calls = s.store_calls;
    full.sync_batches = s.sync_batches;
    full.sync_lag_us = s.sync_lag_us;
    full.invalidations = s.invalidations;
    fill_sized(metrics, full);
  });
}

void rw_set_event_handler(rw_event_fn handler, void* user_data) {
  if (handler == nullptr) return ratewarden::set_event_handler(nullptr);
  ratewarden::set_event_handler([handler, user_data](const ratewarden::Event& e) {
    const rw_event_t event{static_cast<rw_event_kind_t>(e.kind), ratewarden::event_kind_name(e.kind),
                           ratewarden::is_warning(e.kind) ? 1 : 0,    e.store.c_str(),
                           e.message.c_str(),                         e.suppressed};
    handler(&event, user_data);
  });
}
