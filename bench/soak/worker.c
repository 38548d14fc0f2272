/* A C worker of the soak (bench/soak/soak.py), on the C ABI:
 *
 *   soak_worker NAME URL...
 *
 * Each round, on every store: the synchronous calls (rw_hit, rw_peek, rw_hit_many, rw_reserve, rw_reset), then the
 * asynchronous ones (rw_hit_async, rw_peek_async, rw_hit_many_async, rw_reserve_async, rw_reset_async) all in flight
 * at once, awaited. Store errors (a store being restarted) are counted; any other error ends the process with
 * status 1. Once a second it writes one JSON line to stdout: its pid, name, calls made, store errors and the memory
 * store's figures. SIGTERM ends the loop and the process, with status 0. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ratewarden.h"

#define MAX_STORES 8
#define HOT_KEYS 16 /* keys every worker of every runtime hits: contention across processes */
#define FRESH 3     /* distinct keys per round: the memory store's max_keys bound keeps them in check */
#define FRESH_COST 1000 /* the whole quota: that key's state then lives for the period, till evicted or expired */
#define POLICY "1000 per 10 seconds" /* gcra: reserve needs it (or token_bucket); a key lives for 10 s */

static volatile sig_atomic_t stopping = 0;
static void on_sigterm(int sig) {
  (void)sig;
  stopping = 1;
}

static long long calls = 0, store_errors = 0;

/* A store failure is expected while a store restarts: counted. Anything else is a bug: the end of the process. */
static void check(int status, const char *what, const char *errmsg) {
  if (status == RW_OK) return;
  if (status == RW_ERR_STORE_UNAVAILABLE || status == RW_ERR_STORE_TIMEOUT || status == RW_ERR_STORE) {
    __atomic_add_fetch(&store_errors, 1, __ATOMIC_RELAXED);
    return;
  }
  fprintf(stderr, "soak_worker: %s: %s: %s\n", what, rw_status_str(status), errmsg ? errmsg : "");
  exit(1);
}

static void sync_call(int status, const char *what, char **errmsg) {
  ++calls;
  check(status, what, *errmsg);
  rw_free(*errmsg);
  *errmsg = NULL;
}

/* The asynchronous calls of one round, awaited together: their callbacks run on the library's callback thread. */
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_done = PTHREAD_COND_INITIALIZER;
static int in_flight = 0;

static void settled(int status, const char *errmsg) {
  check(status, "async call", errmsg);
  pthread_mutex_lock(&mutex);
  if (--in_flight == 0) pthread_cond_signal(&all_done);
  pthread_mutex_unlock(&mutex);
}
static void on_hit(void *u, int status, const rw_decision_t *d, const char *errmsg) {
  (void)u, (void)d;
  settled(status, errmsg);
}
static void on_done(void *u, int status, const char *errmsg) {
  (void)u;
  settled(status, errmsg);
}
static void on_many(void *u, int status, const rw_decision_t *d, size_t n, const char *errmsg) {
  (void)u, (void)d, (void)n;
  settled(status, errmsg);
}
static void on_reserve(void *u, int status, const rw_reservation_t *r, const char *errmsg) {
  (void)u, (void)r;
  settled(status, errmsg);
}

/* in_flight counts the call before it starts: its callback may run before the function returns to us. */
static void async_call(int status, const char *what, char *errmsg) {
  ++calls;
  if (status != RW_OK) { /* not started: its callback will not run */
    fprintf(stderr, "soak_worker: %s: %s: %s\n", what, rw_status_str(status), errmsg ? errmsg : "");
    exit(1);
  }
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void report(const char *name, rw_store_t *memory, int final) {
  rw_store_stats_t stats = {0, 0, 0};
  char *err = NULL;
  if (memory) check(rw_store_stats(memory, &stats, &err), "rw_store_stats", err);
  printf("{\"pid\": %d, \"name\": \"%s\", \"calls\": %lld, \"store_errors\": %lld, \"memory_keys\": %lld, "
         "\"memory_evictions\": %lld%s}\n",
         (int)getpid(), name, calls, __atomic_load_n(&store_errors, __ATOMIC_RELAXED), (long long)stats.keys,
         (long long)stats.evictions, final ? ", \"done\": true" : "");
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc < 3 || argc - 2 > MAX_STORES) {
    fprintf(stderr, "usage: %s NAME URL... (at most %d)\n", argv[0], MAX_STORES);
    return 2;
  }
  const char *name = argv[1];
  int n = argc - 2;
  rw_store_t *stores[MAX_STORES];
  rw_limiter_t *limiters[MAX_STORES];
  rw_store_t *memory = NULL;
  rw_options_t *options = rw_options_create();
  rw_options_set_algorithm(options, "gcra"); /* reserve needs gcra or token_bucket */
  rw_options_set_prefix(options, "soak");
  for (int i = 0; i < n; ++i) {
    char *err = NULL;
    if (rw_store_open(argv[i + 2], &stores[i], &err) != RW_OK ||
        rw_limiter_create(stores[i], POLICY, options, &limiters[i], &err) != RW_OK) {
      fprintf(stderr, "soak_worker: %s: %s\n", argv[i + 2], err);
      return 1;
    }
    if (strncmp(argv[i + 2], "memory://", 9) == 0 && !memory) memory = stores[i];
  }
  rw_options_destroy(options);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigterm;
  sigaction(SIGTERM, &sa, NULL);
  long pause_ms = getenv("RW_SOAK_PAUSE_MS") ? atol(getenv("RW_SOAK_PAUSE_MS")) : 5;
  struct timespec pause = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};

  double last_report = 0;
  for (long round = 1; !stopping; ++round) {
    char hot[32], fresh[FRESH][96];
    const char *many[FRESH + 1];
    size_t many_len[FRESH + 1];
    snprintf(hot, sizeof hot, "hot-%ld", round % HOT_KEYS);
    many[0] = hot;
    many_len[0] = strlen(hot);
    for (int k = 0; k < FRESH; ++k) {
      snprintf(fresh[k], sizeof fresh[k], "%s-%d-%ld-%d", name, (int)getpid(), round, k);
      many[k + 1] = fresh[k];
      many_len[k + 1] = strlen(fresh[k]);
    }
    rw_decision_t d, ds[FRESH + 1];
    rw_reservation_t r;
    for (int i = 0; i < n; ++i) {
      rw_limiter_t *l = limiters[i];
      char *err = NULL;
      sync_call(rw_hit(l, hot, strlen(hot), 1, &d, &err), "rw_hit", &err);
      sync_call(rw_hit(l, fresh[2], strlen(fresh[2]), FRESH_COST, &d, &err), "rw_hit", &err);
      sync_call(rw_peek(l, hot, strlen(hot), 1, &d, &err), "rw_peek", &err);
      sync_call(rw_hit_many(l, many, many_len, FRESH + 1, 1, ds, &err), "rw_hit_many", &err);
      sync_call(rw_reserve(l, hot, strlen(hot), 1, 0, &r, &err), "rw_reserve", &err);
      sync_call(rw_reset(l, fresh[0], strlen(fresh[0]), &err), "rw_reset", &err);
    }
    pthread_mutex_lock(&mutex);
    in_flight = 5 * n; /* the calls below (a call that cannot start ends the process) */
    pthread_mutex_unlock(&mutex);
    for (int i = 0; i < n; ++i) {
      rw_limiter_t *l = limiters[i];
      char *err = NULL;
      async_call(rw_hit_async(l, hot, strlen(hot), 1, on_hit, NULL, &err), "rw_hit_async", err);
      async_call(rw_peek_async(l, hot, strlen(hot), 1, on_hit, NULL, &err), "rw_peek_async", err);
      async_call(rw_hit_many_async(l, many, many_len, FRESH + 1, 1, on_many, NULL, &err), "rw_hit_many_async", err);
      async_call(rw_reserve_async(l, hot, strlen(hot), 1, 0, on_reserve, NULL, &err), "rw_reserve_async", err);
      async_call(rw_reset_async(l, fresh[1], strlen(fresh[1]), on_done, NULL, &err), "rw_reset_async", err);
    }
    pthread_mutex_lock(&mutex);
    while (in_flight > 0) pthread_cond_wait(&all_done, &mutex);
    pthread_mutex_unlock(&mutex);
    if (now_s() - last_report >= 1) {
      last_report = now_s();
      report(name, memory, 0);
    }
    nanosleep(&pause, NULL);
  }
  report(name, memory, 1);
  for (int i = 0; i < n; ++i) {
    rw_limiter_destroy(limiters[i]);
    rw_store_close(stores[i]);
  }
  return 0;
}
