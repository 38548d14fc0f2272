/* Real redis-server processes for the C tests, started by tests/servers/launch.py. The launcher is their parent: it
 * SIGKILLs them and removes their directories when its stdin closes, so they die with this process however it ends.
 * Every function exits the test with a message if it fails. */
#ifndef RW_TEST_REDIS_PROCESS_H
#define RW_TEST_REDIS_PROCESS_H

#include <sys/types.h>

#define RW_TEST_TEXT 512

struct redis_server {
  pid_t pid;    /* the redis-server; 0 while killed */
  int port;     /* 0 when TLS only */
  int tls_port; /* 0 without TLS */
  char dir[RW_TEST_TEXT];       /* its working directory, removed with it */
  char unix_path[RW_TEST_TEXT]; /* the rest are "" when absent */
  char url[RW_TEST_TEXT];       /* redis://127.0.0.1:P */
  char tls_url[RW_TEST_TEXT];   /* rediss://127.0.0.1:TP?tls_ca=CA */
  char unix_url[RW_TEST_TEXT];  /* redis+unix://PATH */
  /* The CA of the server's certificate, a client certificate and key it signed, an unrelated CA. */
  char ca[RW_TEST_TEXT], cert[RW_TEST_TEXT], key[RW_TEST_TEXT], wrong_ca[RW_TEST_TEXT];
  pid_t launcher;
  int launcher_fd; /* its stdin and stdout */
};

/* A loopback TCP port nobody listens on right now. */
int free_port(void);
/* One server on free loopback ports. `flags`: launch.py's, space-separated, e.g. "", "--tls --unix",
 * "-- --requirepass secret". Returns once it answers PING. */
struct redis_server *start_redis(const char *flags);
/* "kill" (SIGKILL), "start" (after kill: on the same port(s) and socket), "stop" (SIGSTOP) or "cont" (SIGCONT). */
void redis_control(struct redis_server *server, const char *verb);
/* Kills the server, removes its directory, frees `server`. */
void stop_redis(struct redis_server *server);

#endif
