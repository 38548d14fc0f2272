/* One member of the polyglot fleet, in C: `hit URL ALGORITHM POLICY KEY N` prints how many of N hits were allowed;
 * `peek URL ALGORITHM POLICY KEY` prints what remains. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ratewarden.h"

int main(int argc, char **argv) {
  if (argc < 6 || (strcmp(argv[1], "hit") == 0 && argc != 7)) {
    fprintf(stderr, "usage: %s hit|peek URL ALGORITHM POLICY KEY [N]\n", argv[0]);
    return 2;
  }
  rw_store_t *store = NULL;
  rw_limiter_t *limiter = NULL;
  rw_options_t *options = rw_options_create();
  rw_options_set_algorithm(options, argv[3]);
  char *err = NULL;
  if (rw_store_open(argv[2], &store, &err) != RW_OK || rw_limiter_create(store, argv[4], options, &limiter, &err) != RW_OK) {
    fprintf(stderr, "worker: %s\n", err);
    return 1;
  }
  rw_options_destroy(options);
  const char *key = argv[5];
  rw_decision_t d;
  if (strcmp(argv[1], "peek") == 0) {
    if (rw_peek(limiter, key, strlen(key), 1, &d, &err) != RW_OK) {
      fprintf(stderr, "worker: %s\n", err);
      return 1;
    }
    printf("%lld\n", (long long)d.remaining);
  } else {
    long allowed = 0;
    for (long i = 0, n = atol(argv[6]); i < n; ++i) {
      if (rw_hit(limiter, key, strlen(key), 1, &d, &err) != RW_OK) {
        fprintf(stderr, "worker: %s\n", err);
        return 1;
      }
      allowed += d.allowed;
    }
    printf("%ld\n", allowed);
  }
  rw_limiter_destroy(limiter);
  rw_store_close(store);
  return 0;
}
