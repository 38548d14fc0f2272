/* A throwaway redis-server on a free loopback port for the C tests: started by fork/exec, killed with the test. */
#ifndef RW_TEST_REDIS_PROCESS_H
#define RW_TEST_REDIS_PROCESS_H

#include <sys/types.h>

int free_port(void);
/* Starts redis-server on `port` and waits until it accepts connections; returns its pid (the test fails if not). */
pid_t start_redis(int port);
void stop_redis(pid_t pid);

#endif
