#define _POSIX_C_SOURCE 200809L
#include "redis_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void require(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "redis_process: %s\n", what);
    exit(1);
  }
}

int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  require(bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0, "bind");
  require(getsockname(fd, (struct sockaddr *)&addr, &len) == 0, "getsockname");
  close(fd);
  return ntohs(addr.sin_port);
}

static int can_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons((uint16_t)port);
  int ok = connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0;
  close(fd);
  return ok;
}

pid_t start_redis(int port) {
  char port_s[16];
  snprintf(port_s, sizeof port_s, "%d", port);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive this test, whatever ends it */
    if (freopen("/dev/null", "w", stdout) == NULL || freopen("/dev/null", "w", stderr) == NULL) _exit(126);
    execlp("redis-server", "redis-server", "--port", port_s, "--bind", "127.0.0.1", "--save", "", "--appendonly",
           "no", "--enable-debug-command", "yes", (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 500 && !can_connect(port); ++i) nanosleep(&(struct timespec){0, 10000000}, NULL);
  require(can_connect(port), "redis-server did not start (scripts/setup.sh installs it)");
  return pid;
}

void stop_redis(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}
