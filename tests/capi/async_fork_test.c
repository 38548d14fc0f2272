/* The C ABI on a shared store, run by capi_shared_store_test.cpp with a URL (a Redis server or a cluster):
 *   async_fork_test callbacks URL  - 40 limiters x 200 asynchronous hits, and peeks, resets and batches, whose
 *                                    callbacks call back into the library (rw_hit_many, synchronous): all settle
 *   async_fork_test fork URL       - 8 limiters used once, then 8 fork()ed children hit their own key 300 times:
 *                                    every decision is the child's own; the parent keeps working meanwhile
 * Exits 0 when every check passed. */
#define _POSIX_C_SOURCE 200809L /* nanosleep, fork under C11 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ratewarden.h"

#define FAIL(...)                     \
  do {                                \
    fprintf(stderr, __VA_ARGS__);     \
    fprintf(stderr, "\n");            \
    exit(1);                          \
  } while (0)

static rw_limiter_t *limiter_on(rw_store_t *store, const char *policy) {
  rw_limiter_t *limiter = NULL;
  char *err = NULL;
  if (rw_limiter_create(store, policy, NULL, &limiter, &err) != RW_OK) FAIL("rw_limiter_create: %s", err);
  return limiter;
}

static atomic_int settled, failures;

static void on_hit(void *user_data, int status, const rw_decision_t *decision, const char *errmsg) {
  rw_limiter_t *limiter = user_data;
  if (status != RW_OK || decision == NULL) {
    fprintf(stderr, "hit failed: %s\n", errmsg);
    atomic_fetch_add(&failures, 1);
  } else if (atomic_load(&settled) % 50 == 0) {
    /* Back into the library, synchronously, from the callback. */
    const char *keys[] = {"x", "y", "z"};
    const size_t lens[] = {1, 1, 1};
    rw_decision_t out[3];
    char *err = NULL;
    if (rw_hit_many(limiter, keys, lens, 3, 1, out, &err) != RW_OK) {
      fprintf(stderr, "rw_hit_many in a callback: %s\n", err);
      rw_free(err);
      atomic_fetch_add(&failures, 1);
    }
  }
  atomic_fetch_add(&settled, 1);
}

static void on_done(void *user_data, int status, const char *errmsg) {
  (void)user_data;
  if (status != RW_OK) fprintf(stderr, "reset failed: %s\n", errmsg), atomic_fetch_add(&failures, 1);
  atomic_fetch_add(&settled, 1);
}

static void on_many(void *user_data, int status, const rw_decision_t *decisions, size_t n, const char *errmsg) {
  (void)user_data;
  if (status != RW_OK || decisions == NULL || n != 3) fprintf(stderr, "batch: %s\n", errmsg), atomic_fetch_add(&failures, 1);
  atomic_fetch_add(&settled, 1);
}

static int callbacks(const char *url) {
  rw_store_t *store = NULL;
  char *err = NULL;
  if (rw_store_open(url, &store, &err) != RW_OK) FAIL("rw_store_open: %s", err);
  rw_limiter_t *limiters[40];
  for (int i = 0; i < 40; ++i) {
    char policy[32];
    snprintf(policy, sizeof policy, "%d/minute", 100000 + i);
    limiters[i] = limiter_on(store, policy);
  }
  const char *keys[] = {"a", "b", "c"};
  const size_t lens[] = {1, 1, 1};
  int expected = 0;
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 40; ++i) {
      char key[16];
      snprintf(key, sizeof key, "k%d", round % 17);
      if (rw_hit_async(limiters[i], key, strlen(key), 1, on_hit, limiters[i], &err) != RW_OK) FAIL("%s", err);
      ++expected;
    }
  }
  for (int i = 0; i < 40; ++i) {
    if (rw_peek_async(limiters[i], "p", 1, 1, on_hit, limiters[i], &err) != RW_OK) FAIL("%s", err);
    if (rw_reset_async(limiters[i], "r", 1, on_done, NULL, &err) != RW_OK) FAIL("%s", err);
    if (rw_hit_many_async(limiters[i], keys, lens, 3, 1, on_many, NULL, &err) != RW_OK) FAIL("%s", err);
    expected += 3;
  }
  /* The store's handle can go at once: calls in flight keep the store alive. The limiters' are the callbacks'. */
  rw_store_close(store);
  for (int i = 0; i < 3000 && atomic_load(&settled) < expected; ++i) nanosleep(&(struct timespec){0, 10000000}, NULL);
  if (atomic_load(&settled) != expected) FAIL("%d of %d calls settled in 30 s", atomic_load(&settled), expected);
  for (int i = 0; i < 40; ++i) rw_limiter_destroy(limiters[i]);
  return atomic_load(&failures) == 0 ? 0 : 1;
}

static int fork_children(const char *url) {
  rw_store_t *store = NULL;
  char *err = NULL;
  char prefixed[1024];
  snprintf(prefixed, sizeof prefixed, "%s%sprefix=cfork%d", url, strchr(url, '?') ? "&" : "?", (int)getpid());
  if (rw_store_open(prefixed, &store, &err) != RW_OK) FAIL("rw_store_open: %s", err);
  rw_limiter_t *limiters[8];
  rw_decision_t d;
  for (int i = 0; i < 8; ++i) {
    char policy[32], key[16];
    snprintf(policy, sizeof policy, "%d/day", (i + 1) * 1000);
    snprintf(key, sizeof key, "child%d", i);
    limiters[i] = limiter_on(store, policy);
    if (rw_hit(limiters[i], key, strlen(key), 1, &d, &err) != RW_OK || d.used != 1) FAIL("first hit: %s", err);
  }
  pid_t children[8];
  for (int i = 0; i < 8; ++i) {
    children[i] = fork();
    if (children[i] < 0) FAIL("fork");
    if (children[i] == 0) {
      char key[16];
      snprintf(key, sizeof key, "child%d", i);
      for (int n = 0; n < 300; ++n) {
        if (rw_hit(limiters[i], key, strlen(key), 1, &d, NULL) != RW_OK) _exit(2);
        if (!d.allowed || d.limit != (i + 1) * 1000 || d.used != n + 2) _exit(1); /* another's decision */
      }
      _exit(0);
    }
  }
  for (int n = 0; n < 100; ++n) /* the parent meanwhile */
    if (rw_hit(limiters[0], "parent", 6, 1, &d, &err) != RW_OK || d.used != n + 1) FAIL("parent: %s", err);
  int failed = 0;
  for (int i = 0; i < 8; ++i) {
    int status = 0;
    waitpid(children[i], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "child %d: status %d (1: another's decision, 2: an error)\n", i, status);
      failed = 1;
    }
  }
  for (int i = 0; i < 8; ++i) rw_limiter_destroy(limiters[i]);
  rw_store_close(store);
  return failed;
}

int main(int argc, char **argv) {
  if (argc != 3) FAIL("usage: async_fork_test callbacks|fork URL");
  if (strcmp(argv[1], "callbacks") == 0) return callbacks(argv[2]);
  if (strcmp(argv[1], "fork") == 0) return fork_children(argv[2]);
  FAIL("unknown mode %s", argv[1]);
}
