#define _POSIX_C_SOURCE 200809L
#include "redis_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void require(int ok, const char *what, const char *detail) {
  if (!ok) {
    fprintf(stderr, "redis_process: %s%s\n", what, detail);
    exit(1);
  }
}

int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  require(bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0, "bind", "");
  require(getsockname(fd, (struct sockaddr *)&addr, &len) == 0, "getsockname", "");
  close(fd);
  return ntohs(addr.sin_port);
}

/* One JSON line from the launcher (its replies are short, its ready line a few hundred bytes). */
static void receive(struct redis_server *s, char *line, size_t size) {
  size_t n = 0;
  char c;
  while (read(s->launcher_fd, &c, 1) == 1 && c != '\n')
    if (n + 1 < size) line[n++] = c;
  line[n] = '\0';
  require(n > 0, "launch.py exited (see its error above)", "");
  require(strstr(line, "\"ok\": true") != NULL, "launch.py: ", line);
}

/* The value of `"key": ` at or after `from` in the launcher's JSON: a string (its paths need no escapes), a number or
 * null (""). */
static void field(const char *json, const char *from, const char *key, char *out) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\": ", key);
  const char *start = strstr(json, from);
  start = start ? strstr(start, pattern) : NULL;
  require(start != NULL, "no field in the launcher's reply: ", key);
  start += strlen(pattern);
  size_t n = *start == '"' ? strcspn(++start, "\"") : strcspn(start, ",}");
  if (strncmp(start, "null", 4) == 0) n = 0;
  snprintf(out, RW_TEST_TEXT, "%.*s", (int)n, start);
}

struct redis_server *start_redis(const char *flags) {
  struct redis_server *s = calloc(1, sizeof *s);
  char words[1024], *argv[64] = {"python3", RATEWARDEN_LAUNCHER};
  int argc = 2;
  snprintf(words, sizeof words, "%s", flags);
  for (char *w = strtok(words, " "); w && argc < 63; w = strtok(NULL, " ")) argv[argc++] = w;
  int fds[2];
  require(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0, "socketpair", "");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  const int spawned = posix_spawnp(&s->launcher, "python3", &actions, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  require(spawned == 0, "cannot run python3 ", RATEWARDEN_LAUNCHER);
  s->launcher_fd = fds[0];

  char ready[8192], number[RW_TEST_TEXT];
  receive(s, ready, sizeof ready);
  const char *node = "\"nodes\":";
  field(ready, node, "pid", number);
  s->pid = (pid_t)atol(number);
  field(ready, node, "port", number);
  s->port = atoi(number);
  field(ready, node, "tls_port", number);
  s->tls_port = atoi(number);
  field(ready, node, "dir", s->dir);
  field(ready, node, "unix", s->unix_path);
  field(ready, node, "url", s->url);
  field(ready, node, "tls_url", s->tls_url);
  field(ready, node, "unix_url", s->unix_url);
  if (s->tls_port) {
    field(ready, "\"tls\":", "ca", s->ca);
    field(ready, "\"tls\":", "cert", s->cert);
    field(ready, "\"tls\":", "key", s->key);
    field(ready, "\"tls\":", "wrong_ca", s->wrong_ca);
  }
  return s;
}

void redis_control(struct redis_server *s, const char *verb) {
  char line[RW_TEST_TEXT], pid[RW_TEST_TEXT];
  const int n = snprintf(line, sizeof line, "%s 0\n", verb);
  /* MSG_NOSIGNAL: a launcher that died is an error here, never a SIGPIPE. */
  require(send(s->launcher_fd, line, (size_t)n, MSG_NOSIGNAL) == n, "launch.py is gone", "");
  receive(s, line, sizeof line);
  field(line, "", "pid", pid);
  s->pid = (pid_t)atol(pid);
}

void stop_redis(struct redis_server *s) {
  close(s->launcher_fd); /* end of its stdin: it kills the server and removes its directory, then exits */
  waitpid(s->launcher, NULL, 0);
  free(s);
}
