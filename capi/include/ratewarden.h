/* ratewarden.h — the C ABI of ratewarden, a distributed rate limiter.
 *
 * This header is the reference for the C ABI, for any language that can call C (Go through cgo, Rust, Ruby, C#,
 * Python ctypes, ...), and its RW_VERSION_* lines are the version of every package. It carries what a caller needs
 * to limit: stores opened by URL, limiters with their options, hit / peek / reset / hit_many and an asynchronous
 * hit. It does not carry all of the C++ core (core/include/ratewarden/): the parsed policies of a limiter, its
 * max_cost and the storage_key of a key, stores built from C++ objects and the key-format version are C++ only.
 * The Python and Node packages bind the C++ core directly, not this header.
 *
 * Rules (the same for every function):
 *  - Handles are opaque pointers (rw_store_t, rw_options_t, rw_limiter_t), made by a create/open function and freed
 *    by its destroy/close pair. Destroying NULL is a harmless no-op; destroying twice is the caller's bug.
 *  - Functions that can fail return an int status: RW_OK (0) or one of the RW_ERR_* codes below (new codes may be
 *    added; treat unknown ones as errors). rw_status_str() gives a static text for each.
 *  - Their last parameter, `char **errmsg`, may be NULL. When it is not and the call fails, *errmsg receives a
 *    message allocated by the library, to be freed with rw_free(); on success it is left untouched. A message never
 *    contains a password. As in LevelDB, a message already in *errmsg (a variable reused without rw_free) is freed
 *    before the new one is stored: so *errmsg must be NULL or a message from this library, never uninitialised,
 *    and a variable passed to rw_free must be set back to NULL before it is reused.
 *  - A NULL handle, string or out-pointer where one is required fails with RW_ERR_INVALID_ARGUMENT and a message
 *    naming the parameter; destroy/close functions and rw_free accept NULL. The rw_options_set_* setters return
 *    void, so rw_limiter_create reports their misuse (see "Limiter options").
 *  - Keys are binary safe: a pointer and a length (1 to 4096 bytes; NUL bytes allowed).
 *  - Decisions are written into a caller-owned rw_decision_t, or, by the _v2 calls, an rw_decision_v2_t that also
 *    names the policy it reports. Durations are in microseconds.
 *  - The ABI only grows: as in SQLite, a function or struct that must change gets a _v2 successor beside it, and
 *    the original keeps its signature and layout.
 *  - No C++ exception crosses this boundary; nothing here calls abort() on bad input.
 *  - Every function is thread-safe: handles may be shared between threads. A limiter keeps its store alive, so
 *    closing the store handle while limiters still use it is fine.
 *
 * Policies, algorithms and the exact decision semantics: docs/algorithms.md. Store URLs: "memory://",
 * "redis://[user:password@]host:port[/db]", "rediss://..." (TLS), "redis+unix:///path", "redis+cluster://host:port,...",
 * "postgres://user@host/db" (docs/deployment.md); "?mode=local_first" or "?mode=async" on a network store
 * (docs/hybrid.md). Storage keys (shared with every other
 * runtime): docs/key-format.md.
 */
#ifndef RATEWARDEN_H
#define RATEWARDEN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define RW_EXPORT __declspec(dllexport)
#else
#define RW_EXPORT __attribute__((visibility("default")))
#endif

/* ---- Version ---------------------------------------------------------------------------------------------- */

/* Compile-time version of this header. These three lines are the version of every package: CMake (the library's
 * VERSION and SONAME, the core's version()) and pyproject.toml (scikit-build-core's regex provider) read them.
 * package.json cannot: after editing them, run `npm version X.Y.Z --no-git-tag-version` (package.json and
 * package-lock.json); tests/python/test_package.py and tests/node/version.test.js fail until they agree. */
#define RW_VERSION_MAJOR 0
#define RW_VERSION_MINOR 1
#define RW_VERSION_PATCH 0
#define RW_VERSION_NUMBER (RW_VERSION_MAJOR * 10000 + RW_VERSION_MINOR * 100 + RW_VERSION_PATCH)

/* Run-time version of the linked library, as RW_VERSION_NUMBER and as "major.minor.patch" (static text). */
RW_EXPORT int rw_version_number(void);
RW_EXPORT const char *rw_version(void);

/* ---- Status codes ----------------------------------------------------------------------------------------- */

#define RW_OK 0                   /* success */
#define RW_ERR_INVALID_ARGUMENT 1 /* bad policy string, option, URL, key, cost, or a NULL handle / out-pointer */
#define RW_ERR_STORE_UNAVAILABLE 2 /* the store cannot be reached: refused, closed, not connected */
#define RW_ERR_STORE_TIMEOUT 3    /* the store did not answer within its timeout */
#define RW_ERR_STORE 4            /* the store answered with an error (protocol, OOM, READONLY, auth, script) */
#define RW_ERR_NOMEM 5            /* out of memory */
#define RW_ERR_INTERNAL 6         /* a bug in ratewarden: please report it */

/* Static text for a status code, e.g. "invalid argument"; "unknown status" for a code this version lacks. */
RW_EXPORT const char *rw_status_str(int status);

/* Frees a message (or any memory) the library allocated for the caller. NULL is fine. */
RW_EXPORT void rw_free(void *ptr);

/* ---- Stores ----------------------------------------------------------------------------------------------- */

typedef struct rw_store_t rw_store_t;

/* Opens a store by URL:
 *   "memory://[?max_keys=N&shards=N]"  the embedded store (bounded, thread-safe, per process)
 *   "redis://[user:password@]host[:port][/db][?timeout=250ms&connect_timeout=1s&pool=4]"  shared through Redis
 *   "rediss://...[?tls_ca=PATH&tls_cert=PATH&tls_key=PATH&tls_sni=NAME]"  the same over TLS
 *   "redis+unix:///path/to/redis.sock[?db=N&...]"  through a Unix socket
 *   "redis+cluster://[user:password@]host:port[,host:port...][?timeout=..&connect_timeout=..&pool=..]"  Redis Cluster
 *   "rediss+cluster://..."  Redis Cluster over TLS
 *   "redis+sentinel://[user:password@]host:port[,host:port...]/service[?db=N&sentinel_auth=url|none&...]"  the master
 *       that Redis Sentinel names for `service`, found again on a failover ("rediss+sentinel://": over TLS)
 *   "postgres://[user:password@]host[:port]/dbname[?schema=S&table=T&timeout=250ms&pool=8]" (or "postgresql://")
 *       shared through PostgreSQL; libpq.so.5 is loaded when the first such store opens
 * Network stores also take "?mode=local_first" or "?mode=async" (the hybrid modes: docs/hybrid.md).
 * Network stores also take "?circuit_failures=3&circuit_backoff=1s": after that many calls in a row fail for want
 * of the server, calls fail at once (RW_ERR_STORE_UNAVAILABLE) for the back-off, then one probe decides.
 * Every URL also takes "?prefix=P", the key prefix of limiters that do not set their own (default "rw").
 * Opening a Redis store does not connect: the first call does (and every call after a failure reconnects).
 * Fails with RW_ERR_INVALID_ARGUMENT for a malformed URL. */
RW_EXPORT int rw_store_open(const char *url, rw_store_t **store, char **errmsg);

/* Like rw_store_open, but the store of a shared URL (Redis, Redis Cluster, PostgreSQL) is the one already open in
 * this process for the same URL string, while any handle holds it: one connection pool per server, however many
 * parts of a program open it (Python's open_store and Node's limiters given a URL do the same). A memory:// URL
 * opens a new store at each call. Each call returns a handle of its own, to close with rw_store_close. */
RW_EXPORT int rw_store_open_shared(const char *url, rw_store_t **store, char **errmsg);

/* Releases the handle. Limiters made on it keep working. */
RW_EXPORT void rw_store_close(rw_store_t *store);

/* For tests (deterministic time): like rw_store_open, but time comes from now_us(user_data), in microseconds — the
 * memory store's clock, or the time the Redis scripts use instead of the server's TIME. It is called on any thread,
 * on every decision: keep it cheap and thread-safe. Production code uses rw_store_open. */
typedef int64_t (*rw_clock_fn)(void *user_data);
RW_EXPORT int rw_store_open_with_clock(const char *url, rw_clock_fn now_us, void *user_data, rw_store_t **store,
                                       char **errmsg);

/* What a store can tell about itself at once (no round trip). Network stores keep their keys on the server and
 * report zeros. */
typedef struct rw_store_stats_t {
  int64_t keys;      /* states held now (one per key and policy; expired ones until they are dropped) */
  int64_t max_keys;  /* the bound on states held (memory://?max_keys=N); 0 when the store has none */
  int64_t evictions; /* live states dropped to stay within max_keys since the store opened (size it up if > 0) */
} rw_store_stats_t;
RW_EXPORT int rw_store_stats(const rw_store_t *store, rw_store_stats_t *stats, char **errmsg);

/* The counters of the hybrid modes (?mode=local_first, ?mode=async: docs/hybrid.md); zeros for other stores, and
 * sync_lag_us -1 (they read no reset log). */
typedef struct rw_sync_stats_t {
  int64_t local_denials; /* denials answered in-process from the store's last answer (no round trip) */
  int64_t local_allows;  /* mode=async: hits admitted in-process from a lease already charged to the store */
  int64_t store_calls;   /* calls that went to the store */
  int64_t sync_batches;  /* background exchanges with the store (reset-log reads, lease top-ups) */
  int64_t sync_lag_us;   /* microseconds since the reset log was last read (-1: never: not yet, or no log) */
  int64_t invalidations; /* local knowledge dropped because a reset was logged */
} rw_sync_stats_t;
RW_EXPORT int rw_store_sync_stats(const rw_store_t *store, rw_sync_stats_t *stats, char **errmsg);

/* ---- Limiter options -------------------------------------------------------------------------------------- */

typedef struct rw_options_t rw_options_t;

/* Options for rw_limiter_create. Defaults: algorithm "fixed_window", burst = the limit, 10 buckets, the store's
 * prefix, on_store_error "raise". Setters only record values (strings are copied); rw_limiter_create checks them.
 * Setters keep their void signatures, so, as SQLite's sqlite3_str does, they record their first misuse in the
 * options and rw_limiter_create fails with it: a NULL string (RW_ERR_INVALID_ARGUMENT, naming the setter) or a
 * copy that ran out of memory (RW_ERR_NOMEM). rw_options_create never returns NULL (a NULL options means the
 * defaults to rw_limiter_create): out of memory, it returns a shared object whose setters do nothing and with
 * which rw_limiter_create fails with RW_ERR_NOMEM. A setter given a NULL options does nothing. */
RW_EXPORT rw_options_t *rw_options_create(void);
RW_EXPORT void rw_options_destroy(rw_options_t *options);
/* "fixed_window", "sliding_log", "sliding_window", "token_bucket" or "gcra". */
RW_EXPORT void rw_options_set_algorithm(rw_options_t *options, const char *algorithm);
/* token_bucket / gcra capacity (1 .. 1000000000); only with a single rate. */
RW_EXPORT void rw_options_set_burst(rw_options_t *options, int64_t burst);
/* sliding_window precision (1 .. 1000). */
RW_EXPORT void rw_options_set_buckets(rw_options_t *options, int32_t buckets);
/* The storage key prefix (1 .. 256 bytes, no '{' or '}'). */
RW_EXPORT void rw_options_set_prefix(rw_options_t *options, const char *prefix);
/* What a call returns when the store fails: "raise" (the error status), "allow" (an allowed decision: fail open)
 * or "deny" (a denied decision with retry_after of at most 1 s: fail closed). */
RW_EXPORT void rw_options_set_on_store_error(rw_options_t *options, const char *on_store_error);
/* What the limiter's figures are counted under (rw_limiter_metrics, the exporters' `limiter` label): 1 to 200
 * bytes; by default the policy string. Limiters of one name count together. */
RW_EXPORT void rw_options_set_name(rw_options_t *options, const char *name);

/* ---- Limiters --------------------------------------------------------------------------------------------- */

typedef struct rw_limiter_t rw_limiter_t;

/* A decision, written by rw_hit / rw_peek / rw_hit_many (rw_decision_v2_t below adds which policy it reports). */
typedef struct rw_decision_t {
  int allowed;             /* 1 if the call is (or, for a peek, would be) allowed, else 0 */
  int64_t limit;           /* the capacity of the policy reported (the tightest one) */
  int64_t remaining;       /* what is left after this call */
  int64_t reset_after_us;  /* time until the key is back to its full quota */
  int64_t retry_after_us;  /* 0 when allowed; else a hit at now + retry_after is allowed (if no other traffic) */
  int64_t used;            /* consumed in the current window / bucket */
} rw_decision_t;

/* A decision that also says which policy it reports, written by the _v2 calls (rw_hit_v2 & co). The fields of
 * rw_decision_t come first, unchanged; rw_decision_t itself keeps its layout for the calls that take it. */
typedef struct rw_decision_v2_t {
  int allowed;
  int64_t limit;
  int64_t remaining;
  int64_t reset_after_us;
  int64_t retry_after_us;
  int64_t used;
  /* The policy this decision reports: its index (from 0) in the limiter's policy string, e.g. 1 for "1000/hour" in
   * "10/second; 1000/hour". Always 0 for a single policy. Allowed: the policy with the lowest remaining (the first
   * on a tie); denied: the one that holds the caller back longest (docs/algorithms.md). HTTP servers name this
   * policy in their RateLimit field. */
  int32_t policy_index;
} rw_decision_v2_t;

/* Makes a limiter applying `policy` ("100/minute", "10 per second; 1000/hour", ...) on `store`. `options` may be
 * NULL for the defaults; it is not kept. Fails with RW_ERR_INVALID_ARGUMENT naming the bad value. */
RW_EXPORT int rw_limiter_create(rw_store_t *store, const char *policy, const rw_options_t *options,
                                rw_limiter_t **limiter, char **errmsg);

/* Releases the limiter. Calls in progress on other threads must have returned, and asynchronous hits keep the
 * limiter alive until their callbacks have run. */
RW_EXPORT void rw_limiter_destroy(rw_limiter_t *limiter);

/* Consumes `cost` (1 .. the smallest capacity of the policies) for the key if every policy allows it. A denial is
 * RW_OK with decision->allowed == 0: it is an answer, not an error. */
RW_EXPORT int rw_hit(rw_limiter_t *limiter, const char *key, size_t keylen, int64_t cost, rw_decision_t *decision,
                     char **errmsg);

/* What rw_hit would decide, consuming nothing. */
RW_EXPORT int rw_peek(rw_limiter_t *limiter, const char *key, size_t keylen, int64_t cost, rw_decision_t *decision,
                      char **errmsg);

/* rw_hit and rw_peek writing an rw_decision_v2_t (the decision with its policy_index). */
RW_EXPORT int rw_hit_v2(rw_limiter_t *limiter, const char *key, size_t keylen, int64_t cost,
                        rw_decision_v2_t *decision, char **errmsg);
RW_EXPORT int rw_peek_v2(rw_limiter_t *limiter, const char *key, size_t keylen, int64_t cost,
                         rw_decision_v2_t *decision, char **errmsg);

/* Forgets the key under every policy of the limiter. */
RW_EXPORT int rw_reset(rw_limiter_t *limiter, const char *key, size_t keylen, char **errmsg);

/* One hit of `cost` for each of the n keys, in one round trip where the store can (one pipeline for Redis).
 * Writes n decisions to `decisions`. If any key is invalid nothing is charged. Keys the store fails on get
 * on_store_error's answer: with "allow" / "deny", their fail-open / fail-closed decision (the other keys keep theirs);
 * with "raise", the call fails (keys the store already decided stay charged). n may be 0. */
RW_EXPORT int rw_hit_many(rw_limiter_t *limiter, const char *const *keys, const size_t *keylens, size_t n,
                          int64_t cost, rw_decision_t *decisions, char **errmsg);
/* rw_hit_many writing n rw_decision_v2_t. */
RW_EXPORT int rw_hit_many_v2(rw_limiter_t *limiter, const char *const *keys, const size_t *keylens, size_t n,
                             int64_t cost, rw_decision_v2_t *decisions, char **errmsg);

/* ---- Asynchronous calls (for event loops) ----------------------------------------------------------------- */

/* Threading: each accepted asynchronous call calls its callback exactly once, on the library's callback thread —
 * never on the caller's thread, though it may run before the function has returned (that thread runs beside the
 * caller's: make ready what the callback reads before the call). One thread serves every callback of the
 * process, in order (docs/threading.md): a callback should be quick — hand the answer to your event loop — but it
 * may block and may call any function of this header, synchronous ones included (they wait on the library's I/O
 * thread, not on this one; nothing can deadlock). Pointers passed to a callback are valid only during the call:
 * copy what you keep. Network I/O runs on one I/O thread per process: a call in flight holds no thread.
 * Bad arguments are reported by the return value (and then the callback is never called); store failures reach the
 * callback as on_store_error says. Keys are copied. The limiter and its store stay alive until every callback has
 * run, even if rw_limiter_destroy / rw_store_close are called meanwhile. */

/* On success status is RW_OK, decision points to the decision and errmsg is NULL; on failure decision is NULL and
 * errmsg is a message. */
typedef void (*rw_hit_callback)(void *user_data, int status, const rw_decision_t *decision, const char *errmsg);
/* On success status is RW_OK and errmsg is NULL. */
typedef void (*rw_done_callback)(void *user_data, int status, const char *errmsg);
/* On success status is RW_OK and decisions points to n decisions (one per key, in order); on failure decisions is
 * NULL, n is 0 and errmsg is a message. */
typedef void (*rw_hit_many_callback)(void *user_data, int status, const rw_decision_t *decisions, size_t n,
                                     const char *errmsg);
/* The same two for the _v2 calls, with rw_decision_v2_t. */
typedef void (*rw_hit_v2_callback)(void *user_data, int status, const rw_decision_v2_t *decision,
                                   const char *errmsg);
typedef void (*rw_hit_many_v2_callback)(void *user_data, int status, const rw_decision_v2_t *decisions, size_t n,
                                        const char *errmsg);

/* rw_hit, rw_peek, rw_reset and rw_hit_many, started and returning at once. */
RW_EXPORT int rw_hit_async(rw_limiter_t *limiter, const char *key, size_t keylen, int64_t cost,
                           rw_hit_callback callback, void *user_data, char **errmsg);
RW_EXPORT int rw_peek_async(rw_limiter_t *limiter, const char *key, size_t keylen, int64_t cost,
                            rw_hit_callback callback, void *user_data, char **errmsg);
RW_EXPORT int rw_reset_async(rw_limiter_t *limiter, const char *key, size_t keylen, rw_done_callback callback,
                             void *user_data, char **errmsg);
RW_EXPORT int rw_hit_many_async(rw_limiter_t *limiter, const char *const *keys, const size_t *keylens, size_t n,
                                int64_t cost, rw_hit_many_callback callback, void *user_data, char **errmsg);
/* rw_hit_async, rw_peek_async and rw_hit_many_async answering with rw_decision_v2_t. */
RW_EXPORT int rw_hit_async_v2(rw_limiter_t *limiter, const char *key, size_t keylen, int64_t cost,
                              rw_hit_v2_callback callback, void *user_data, char **errmsg);
RW_EXPORT int rw_peek_async_v2(rw_limiter_t *limiter, const char *key, size_t keylen, int64_t cost,
                               rw_hit_v2_callback callback, void *user_data, char **errmsg);
RW_EXPORT int rw_hit_many_async_v2(rw_limiter_t *limiter, const char *const *keys, const size_t *keylens, size_t n,
                                   int64_t cost, rw_hit_many_v2_callback callback, void *user_data, char **errmsg);

/* ---- Refunds ------------------------------------------------------------------------------------------------ */

/* Gives back up to `cost` of what was charged most recently on the key, in every policy (docs/algorithms.md,
 * "Refunds": e.g. count only failed logins — hit before, refund when the login succeeded), atomically in the store.
 * Writes what rw_peek_v2 of `cost` decides afterwards. An absent key has nothing to give back. */
RW_EXPORT int rw_refund(rw_limiter_t *limiter, const char *key, size_t keylen, int64_t cost,
                        rw_decision_v2_t *decision, char **errmsg);
RW_EXPORT int rw_refund_async(rw_limiter_t *limiter, const char *key, size_t keylen, int64_t cost,
                              rw_hit_v2_callback callback, void *user_data, char **errmsg);

/* ---- Reservations: pacing outbound calls (docs/pacing.md, docs/algorithms.md "Reservations") ----------------- */

/* What rw_reserve writes. decision.allowed = 1: the slot is charged; act after wait_us (0: now) — the caller sleeps.
 * decision.allowed = 0: the wait would exceed max_wait_us; nothing was charged and decision.retry_after_us is the
 * wait the reservation would have needed. */
typedef struct rw_reservation_t {
  rw_decision_v2_t decision;  /* remaining, reset_after_us, ... as of the slot (durations from now) */
  int64_t wait_us;
  int64_t ticket;             /* what rw_cancel needs; 0 when the slot cannot be given back (several policies) */
} rw_reservation_t;

/* Charges a hit of `cost` at the earliest instant, no later than now + max_wait_us, at which every policy of the
 * limiter allows it — atomically in the store, so callers of every process are served in arrival order. The
 * limiter's algorithm must be "gcra" or "token_bucket" (else RW_ERR_INVALID_ARGUMENT). Store failures are answered
 * as rw_hit's (on_store_error: "allow" gives wait_us 0). */
RW_EXPORT int rw_reserve(rw_limiter_t *limiter, const char *key, size_t keylen, int64_t cost, int64_t max_wait_us,
                         rw_reservation_t *reservation, char **errmsg);
typedef void (*rw_reserve_callback)(void *user_data, int status, const rw_reservation_t *reservation,
                                    const char *errmsg);
RW_EXPORT int rw_reserve_async(rw_limiter_t *limiter, const char *key, size_t keylen, int64_t cost,
                               int64_t max_wait_us, rw_reserve_callback callback, void *user_data, char **errmsg);
/* Gives back the slot of `reservation` (rw_reserve's, for this key and cost) when the caller will not use it:
 * *given = 1 when it was given back, which it is when nothing was charged on the key after it; otherwise the slot
 * stays spent (giving it back would let a newcomer share a later caller's slot). A store failure is an error status
 * with on_store_error "raise", else *given = 0. */
RW_EXPORT int rw_cancel(rw_limiter_t *limiter, const char *key, size_t keylen, int64_t cost,
                        const rw_reservation_t *reservation, int *given, char **errmsg);

/* ---- Deny and allow lists held in the store (docs/key-lists.md) ----
 * A key list is keys added for a duration, seen at once by every process of every runtime on the store: Python's
 * KeyList(name, store, duration=s) and Node's new KeyList({ name, store, durationMs }) with the same name and
 * duration are the same list. */
typedef struct rw_key_list_t rw_key_list_t;

/* name: 1 to 64 letters, digits, '_', '.' or '-'. duration_us: how long an entry lasts from when it was added, from
 * 1000 (1 ms) to 3650 days; 0 means 3650 days (until removed). RW_ERR_INVALID_ARGUMENT for anything else. */
RW_EXPORT int rw_key_list_create(rw_store_t *store, const char *name, int64_t duration_us, rw_key_list_t **list,
                                 char **errmsg);
RW_EXPORT void rw_key_list_destroy(rw_key_list_t *list);
/* Adds the key for the list's duration from now (again from now if it was there). */
RW_EXPORT int rw_key_list_add(rw_key_list_t *list, const char *key, size_t keylen, char **errmsg);
RW_EXPORT int rw_key_list_remove(rw_key_list_t *list, const char *key, size_t keylen, char **errmsg);
/* *contains = 1 when the key is in the list, else 0; *expires_in_us (may be NULL): the time its entry has left, 0
 * when it is not in the list. */
RW_EXPORT int rw_key_list_contains(rw_key_list_t *list, const char *key, size_t keylen, int *contains,
                                   int64_t *expires_in_us, char **errmsg);

/* ---- Figures and events (docs/observability.md) ----
 * Always counted, cheap to read. The structs below grow at their end in later versions: set `size` to
 * sizeof(the struct) before the call; the library fills what both it and the caller know of, and sets `size` to
 * what it filled. */

/* A limiter's decisions (hits and reservations; peeks, refunds and cancels are not decisions). */
typedef struct rw_limiter_metrics_t {
  size_t size;
  int64_t allowed;
  int64_t denied;
  int64_t cost;      /* the cost the allowed ones charged */
  int64_t fallbacks; /* decisions on_store_error "allow" / "deny" gave because the store failed */
} rw_limiter_metrics_t;
RW_EXPORT int rw_limiter_metrics(const rw_limiter_t *limiter, rw_limiter_metrics_t *metrics, char **errmsg);
/* The limiter's name (rw_options_set_name): valid while the limiter lives. */
RW_EXPORT const char *rw_limiter_name(const rw_limiter_t *limiter);

/* A store call's outcome: the index of rw_store_metrics_t's per-outcome arrays. */
enum { RW_CALL_OK = 0, RW_CALL_TIMEOUT = 1, RW_CALL_UNAVAILABLE = 2, RW_CALL_ERROR = 3, RW_CALL_OUTCOMES = 4 };
/* The upper bounds, in seconds, of the call duration histogram's buckets; the last bucket (+Inf) has none. */
#define RW_DURATION_BUCKETS 15
RW_EXPORT const double *rw_duration_bucket_bounds(void); /* RW_DURATION_BUCKETS - 1 values */

/* What a store can tell about itself at once. Counters count since it opened; gauges say what holds now. */
typedef struct rw_store_metrics_t {
  size_t size;
  int64_t keys;          /* gauge: in-process states held (the memory store; a hybrid mode's knowledge) */
  int64_t max_keys;      /* gauge: their bound */
  int64_t evictions;     /* live states dropped to stay within max_keys */
  int64_t expired_drops; /* expired states dropped to make room */
  /* Network stores: calls by outcome (RW_CALL_*), their durations (per bucket, not cumulative). */
  int64_t calls[RW_CALL_OUTCOMES];
  int64_t duration_buckets[RW_CALL_OUTCOMES][RW_DURATION_BUCKETS];
  double duration_sum_seconds[RW_CALL_OUTCOMES];
  int64_t circuits_open;    /* gauge: servers whose circuit breaker is open */
  int64_t circuit_openings; /* times a circuit opened */
  int64_t connections_open; /* gauge */
  int64_t pool_size;        /* gauge: PostgreSQL's pool */
  int64_t sweeps;           /* PostgreSQL: passes of the expired-row sweep */
  /* The hybrid modes (rw_sync_stats_t's figures). */
  int64_t local_denials;
  int64_t local_allows;
  int64_t store_calls;
  int64_t sync_batches;
  int64_t sync_lag_us; /* gauge: -1 when no reset log was ever read (every store but a hybrid mode's) */
  int64_t invalidations;
} rw_store_metrics_t;
RW_EXPORT int rw_store_metrics(const rw_store_t *store, rw_store_metrics_t *metrics, char **errmsg);

/* Events: what an operator must not miss (a store failing and recovering, a circuit opening and closing, a fork,
 * live keys evicted, a hybrid lease expired), at most one per kind and store per second, the others counted in the
 * next one's `suppressed`. */
typedef enum rw_event_kind_t {
  RW_EVENT_STORE_FAILED = 0,
  RW_EVENT_STORE_RECOVERED = 1,
  RW_EVENT_CIRCUIT_OPENED = 2,
  RW_EVENT_CIRCUIT_CLOSED = 3,
  RW_EVENT_FORK_DETECTED = 4,
  RW_EVENT_LIVE_EVICTIONS = 5,
  RW_EVENT_LEASE_EXPIRED = 6
} rw_event_kind_t;
typedef struct rw_event_t {
  rw_event_kind_t kind;
  const char *kind_name; /* "store_failed", ... */
  int warning;           /* 1 for the kinds a log shows as warnings (failures, openings, evictions) */
  const char *store;     /* the store's name (its URL, password masked) */
  const char *message;
  int64_t suppressed;
} rw_event_t;
/* Called on the library's callback thread, one event at a time; the event is valid during the call only. NULL
 * removes the handler. The handler may block (delaying later events) and may call the library. */
typedef void (*rw_event_fn)(const rw_event_t *event, void *user_data);
RW_EXPORT void rw_set_event_handler(rw_event_fn handler, void *user_data);

#ifdef __cplusplus
}
#endif

#endif /* RATEWARDEN_H */
