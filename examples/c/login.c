/* Login protection from C: at most 5 attempts per username per minute; the 6th is refused with its Retry-After.
 * Usage: login [store-url]   (default: memory://) */
#include <stdio.h>
#include <string.h>

#include "ratewarden.h"

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : "memory://";
  rw_store_t *store = NULL;
  rw_limiter_t *attempts = NULL;
  char *err = NULL;
  if (rw_store_open(url, &store, &err) != RW_OK || rw_limiter_create(store, "5/minute", NULL, &attempts, &err) != RW_OK) {
    fprintf(stderr, "login: %s\n", err);
    rw_free(err);
    return 1;
  }
  const char *users[] = {"alice", "alice", "alice", "alice", "alice", "alice", "bob"};
  printf("%-8s %-8s %-8s %-10s %s\n", "attempt", "user", "status", "remaining", "retry-after");
  for (int i = 0; i < 7; ++i) {
    char key[64];
    snprintf(key, sizeof key, "login:%s", users[i]);
    rw_decision_t d;
    int status = rw_hit(attempts, key, strlen(key), 1, &d, &err);
    if (status != RW_OK) {
      fprintf(stderr, "login: %s: %s\n", rw_status_str(status), err);
      rw_free(err);
      return 1;
    }
    /* Retry-After in whole seconds, rounded up: waiting that long always succeeds. */
    long long retry_s = (long long)((d.retry_after_us + 999999) / 1000000);
    char retry[32] = "-";
    if (!d.allowed) snprintf(retry, sizeof retry, "%lld s", retry_s);
    printf("%-8d %-8s %-8s %-10lld %s\n", i + 1, users[i], d.allowed ? "200" : "429", (long long)d.remaining, retry);
  }
  rw_limiter_destroy(attempts);
  rw_store_close(store);
  return 0;
}
