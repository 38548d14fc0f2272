/* Pacing outbound calls from C (docs/pacing.md): a partner API allows 10 requests per second. Each call reserves
 * its slot with rw_reserve and sleeps until it comes; a call that cannot wait long gives up at once, charging
 * nothing; a reservation that will not be used is given back with rw_cancel.
 * Usage: pacing [store-url]   (default: memory://; a redis:// URL paces every process on it) */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ratewarden.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_us(int64_t us) {
  struct timespec left = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
  while (nanosleep(&left, &left) != 0) {
  }  /* a signal woke it early: sleep what is left */
}

static int fail(const char *what, int status, char *err) {
  fprintf(stderr, "pacing: %s: %s: %s\n", what, rw_status_str(status), err ? err : "");
  rw_free(err);
  return 1;
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : "memory://";
  const char *key = "partner-api";
  rw_store_t *store = NULL;
  rw_limiter_t *partner = NULL;
  char *err = NULL;
  rw_options_t *options = rw_options_create();
  rw_options_set_algorithm(options, "gcra");
  rw_options_set_burst(options, 1);
  rw_options_set_prefix(options, "example-pacing");
  int status = rw_store_open(url, &store, &err);
  if (status == RW_OK) status = rw_limiter_create(store, "10/second", options, &partner, &err);
  rw_options_destroy(options);
  if (status != RW_OK) return fail("open", status, err);

  double first = now_s();
  for (int call = 0; call < 10; ++call) {
    rw_reservation_t r;
    status = rw_reserve(partner, key, strlen(key), 1, INT64_MAX, &r, &err);  /* INT64_MAX: any wait will do */
    if (status != RW_OK) return fail("rw_reserve", status, err);
    sleep_us(r.wait_us);  /* 0 for the first call, then about 100 ms each */
  }
  printf("10 calls: the last one %.1f s after the first (one every 100 ms)\n", now_s() - first);

  /* A call that cannot wait: max_wait_us 0 takes a slot only if one is free now. */
  rw_reservation_t now;
  status = rw_reserve(partner, key, strlen(key), 1, 0, &now, &err);
  if (status != RW_OK) return fail("rw_reserve", status, err);
  if (!now.decision.allowed) {
    printf("gave up: the next slot is %lld ms away\n", (long long)((now.decision.retry_after_us + 999) / 1000));
  }

  /* A reservation that will not be used (its caller is shutting down): give the slot back for the next caller. */
  rw_reservation_t unused;
  int given = 0;
  status = rw_reserve(partner, key, strlen(key), 1, INT64_MAX, &unused, &err);
  if (status == RW_OK) status = rw_cancel(partner, key, strlen(key), 1, &unused, &given, &err);
  if (status != RW_OK) return fail("rw_cancel", status, err);
  printf("a reservation given back: %s\n", given ? "yes" : "no");

  rw_limiter_destroy(partner);
  rw_store_close(store);
  return 0;
}
