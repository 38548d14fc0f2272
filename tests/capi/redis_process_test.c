/* The test servers through redis_process.h: each listener they report answers, and the launcher's commands (kill,
 * start, stop, cont) do what they say. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "redis_process.h"

static int checks, failures;
#define CHECK(cond)                                                              \
  do {                                                                           \
    checks++;                                                                    \
    if (!(cond)) {                                                               \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                                \
    }                                                                            \
  } while (0)

/* Runs a shell command; `out` gets the first line it prints. Returns whether it succeeded. */
static int run(const char *command, char *out, size_t size) {
  FILE *p = popen(command, "r");
  if (fgets(out, (int)size, p) == NULL) out[0] = '\0';
  out[strcspn(out, "\n")] = '\0';
  while (fgetc(p) != EOF) {
  }
  return pclose(p) == 0;
}

/* The state letter of /proc/PID/stat ('T' stopped, 'Z' zombie...), or 0 when the pid does not exist. */
static char state_of(pid_t pid) {
  char path[64], stat[512] = "";
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL) return 0;
  size_t n = fread(stat, 1, sizeof stat - 1, f);
  fclose(f);
  stat[n] = '\0';
  const char *end = strrchr(stat, ')');
  return end ? end[2] : 0;
}

static int pings(const char *where, const char *ca, const struct redis_server *s) {
  char command[4 * RW_TEST_TEXT], out[64];
  if (ca)
    snprintf(command, sizeof command, "redis-cli --tls --cacert %s --cert %s --key %s -p %d -a pw ping 2>/dev/null", ca,
             s->cert, s->key, s->tls_port);
  else
    snprintf(command, sizeof command, "redis-cli %s -a pw ping 2>/dev/null", where);
  return run(command, out, sizeof out) && strcmp(out, "PONG") == 0;
}

int main(void) {
  struct redis_server *s = start_redis("--tls --unix -- --requirepass pw");
  char expected[2 * RW_TEST_TEXT], plain[64], unix_socket[RW_TEST_TEXT + 8];
  snprintf(expected, sizeof expected, "redis://127.0.0.1:%d", s->port);
  CHECK(strcmp(s->url, expected) == 0);
  snprintf(expected, sizeof expected, "rediss://127.0.0.1:%d?tls_ca=%s", s->tls_port, s->ca);
  CHECK(strcmp(s->tls_url, expected) == 0);
  snprintf(expected, sizeof expected, "redis+unix://%s", s->unix_path);
  CHECK(strcmp(s->unix_url, expected) == 0);
  snprintf(plain, sizeof plain, "-p %d", s->port);
  snprintf(unix_socket, sizeof unix_socket, "-s %s", s->unix_path);
  CHECK(pings(plain, NULL, s));
  CHECK(pings(NULL, s->ca, s));
  CHECK(!pings(NULL, s->wrong_ca, s));
  CHECK(pings(unix_socket, NULL, s));

  const pid_t first = s->pid;
  redis_control(s, "stop");
  CHECK(state_of(first) == 'T');
  redis_control(s, "cont");
  CHECK(state_of(first) != 'T' && pings(plain, NULL, s));
  redis_control(s, "kill");
  CHECK(s->pid == 0 && (state_of(first) == 0 || state_of(first) == 'Z'));
  redis_control(s, "start");
  CHECK(s->pid > 0 && s->pid != first && pings(plain, NULL, s) && pings(unix_socket, NULL, s));

  char dir[RW_TEST_TEXT];
  snprintf(dir, sizeof dir, "%s", s->dir);
  stop_redis(s);
  CHECK(access(dir, F_OK) != 0);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures == 0 ? 0 : 1;
}
