/* The shared conformance vectors through the C ABI (rw_hit_v2 / rw_peek_v2, so policy_index is compared too), on
 * the memory store and on a real redis-server.
 * Usage: conformance_c VECTORS_AS_LINES   (tests/capi/vectors_to_lines.py makes the file from vectors.json) */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ratewarden.h"
#include "redis_process.h"

#define MAX_STEPS 64

static _Atomic int64_t now_us;

static int64_t test_clock(void *user_data) {
  (void)user_data;
  return atomic_load(&now_us);
}

static size_t unhex(const char *hex, char *out) {
  size_t n = 0;
  for (; hex[0] && hex[1]; hex += 2) {
    unsigned byte;
    sscanf(hex, "%2x", &byte);
    out[n++] = (char)byte;
  }
  return n;
}

/* Runs every case of the file on stores opened from `url`; returns the number of mismatched steps. */
static int run_all(const char *path, const char *url, int *steps) {
  FILE *in = fopen(path, "r");
  if (in == NULL) {
    perror(path);
    exit(2);
  }
  char line[1024], key[512];
  long long base = 0;
  int failures = 0, index = -1;
  rw_store_t *store = NULL;
  rw_limiter_t *limiter = NULL;
  rw_reservation_t reservations[MAX_STEPS]; /* by step index in the case, for the cancels that name them */
  while (fgets(line, sizeof line, in) != NULL) {
    char op[16], algorithm[32], burst[24], buckets[24], policy[256], key_hex[1024];
    long long t, cost, e[7];
    if (sscanf(line, "base %lld", &base) == 1) continue;
    if (sscanf(line, "case %d %31s %23s %23s %255[^\n]", &index, algorithm, burst, buckets, policy) == 5) {
      rw_limiter_destroy(limiter);
      rw_store_close(store);
      rw_options_t *o = rw_options_create();
      rw_options_set_algorithm(o, algorithm);
      if (strcmp(burst, "-") != 0) rw_options_set_burst(o, atoll(burst));
      if (strcmp(buckets, "-") != 0) rw_options_set_buckets(o, atoi(buckets));
      char prefix[32];
      snprintf(prefix, sizeof prefix, "c-conformance%d", index);
      rw_options_set_prefix(o, prefix);
      char *err = NULL;
      if (rw_store_open_with_clock(url, test_clock, NULL, &store, &err) != RW_OK ||
          rw_limiter_create(store, policy, o, &limiter, &err) != RW_OK) {
        fprintf(stderr, "case %d: %s\n", index, err);
        exit(2);
      }
      rw_options_destroy(o);
      continue;
    }
    if (sscanf(line, "reset %lld %1023s", &t, key_hex) == 2) {
      atomic_store(&now_us, base + t);
      size_t n = unhex(key_hex, key);
      if (rw_reset(limiter, key, n, NULL) != RW_OK) ++failures;
      continue;
    }
    long long step, max_wait, wait, given;
    if (sscanf(line, "reserve %lld %lld %lld %1023s %lld %lld %lld %lld %lld %lld %lld %lld %lld", &step, &t, &cost,
               key_hex, &max_wait, &e[0], &e[1], &e[2], &e[3], &e[4], &e[5], &e[6], &wait) == 13) {
      atomic_store(&now_us, base + t);
      size_t n = unhex(key_hex, key);
      rw_reservation_t *r = &reservations[step % MAX_STEPS];
      char *err = NULL;
      int st = rw_reserve(limiter, key, n, cost, max_wait, r, &err);
      ++*steps;
      if (st != RW_OK || r->decision.allowed != e[0] || r->decision.limit != e[1] || r->decision.remaining != e[2] ||
          r->decision.reset_after_us != e[3] || r->decision.retry_after_us != e[4] || r->decision.used != e[5] ||
          r->decision.policy_index != e[6] || r->wait_us != wait) {
        ++failures;
        fprintf(stderr, "%s case %d reserve t=%lld: got %s allowed=%d remaining=%lld reset=%lld retry=%lld wait=%lld%s%s\n",
                url, index, t, rw_status_str(st), r->decision.allowed, (long long)r->decision.remaining,
                (long long)r->decision.reset_after_us, (long long)r->decision.retry_after_us, (long long)r->wait_us,
                err ? ": " : "", err ? err : "");
        rw_free(err);
      }
      continue;
    }
    if (sscanf(line, "cancel %lld %lld %1023s %lld %lld", &t, &cost, key_hex, &step, &given) == 5) {
      atomic_store(&now_us, base + t);
      size_t n = unhex(key_hex, key);
      int got = -1;
      ++*steps;
      if (rw_cancel(limiter, key, n, cost, &reservations[step % MAX_STEPS], &got, NULL) != RW_OK || got != given) {
        ++failures;
        fprintf(stderr, "%s case %d cancel t=%lld: given=%d, expected %lld\n", url, index, t, got, given);
      }
      continue;
    }
    if (sscanf(line, "refused %lld %lld %1023s %lld", &t, &cost, key_hex, &max_wait) == 4) {
      size_t n = unhex(key_hex, key);
      rw_reservation_t r;
      ++*steps;
      if (rw_reserve(limiter, key, n, cost, max_wait, &r, NULL) != RW_ERR_INVALID_ARGUMENT) {
        ++failures;
        fprintf(stderr, "%s case %d: reserve was not refused\n", url, index);
      }
      continue;
    }
    if (sscanf(line, "%15s %lld %lld %1023s %lld %lld %lld %lld %lld %lld %lld", op, &t, &cost, key_hex, &e[0], &e[1],
               &e[2], &e[3], &e[4], &e[5], &e[6]) != 11)
      continue;
    atomic_store(&now_us, base + t);
    size_t n = unhex(key_hex, key);
    rw_decision_v2_t d;
    char *err = NULL;
    int st = strcmp(op, "hit") == 0      ? rw_hit_v2(limiter, key, n, cost, &d, &err)
             : strcmp(op, "refund") == 0 ? rw_refund(limiter, key, n, cost, &d, &err)
                                         : rw_peek_v2(limiter, key, n, cost, &d, &err);
    ++*steps;
    if (st != RW_OK || d.allowed != e[0] || d.limit != e[1] || d.remaining != e[2] || d.reset_after_us != e[3] ||
        d.retry_after_us != e[4] || d.used != e[5] || d.policy_index != e[6]) {
      ++failures;
      fprintf(stderr,
              "%s case %d %s t=%lld: got %s allowed=%d limit=%lld remaining=%lld reset=%lld retry=%lld used=%lld "
              "policy_index=%d%s%s\n",
              url, index, op, t, rw_status_str(st), d.allowed, (long long)d.limit, (long long)d.remaining,
              (long long)d.reset_after_us, (long long)d.retry_after_us, (long long)d.used, (int)d.policy_index,
              err ? ": " : "", err ? err : "");
      rw_free(err);
    }
  }
  rw_limiter_destroy(limiter);
  rw_store_close(store);
  fclose(in);
  return failures;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s VECTORS_AS_LINES\n", argv[0]);
    return 2;
  }
  int steps = 0, failures = run_all(argv[1], "memory://", &steps);
  struct redis_server *redis = start_redis("");
  failures += run_all(argv[1], redis->url, &steps);
  stop_redis(redis);
  printf("%d passed, %d failed\n", steps - failures, failures);
  return failures == 0 ? 0 : 1;
}
