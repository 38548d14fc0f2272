/* The C ABI from plain C11: every function and every status code, misuse included, on the memory store and on a
 * real redis-server that this program starts on a free loopback port (and stops). */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ratewarden.h"
#include "redis_process.h"

static const char *phase = "";
static atomic_int checks; /* callbacks check on library threads */

#define CHECK(cond)                                                                                        \
  do {                                                                                                     \
    ++checks;                                                                                              \
    if (!(cond)) {                                                                                         \
      fprintf(stderr, "%s:%d: phase %s: check failed: %s\n", __FILE__, __LINE__, phase, #cond);           \
      exit(1);                                                                                             \
    }                                                                                                      \
  } while (0)

/* The call must store its message through `&err`; the status is read before the message (C leaves the order of
 * evaluation of arguments open). */
#define EXPECT_ERROR(call, expected, needle) \
  do {                                       \
    char *err = NULL;                        \
    int st_ = (call);                        \
    expect_error(st_, err, expected, needle); \
  } while (0)

static void start_phase(const char *name) {
  phase = name;
  fprintf(stderr, "=== %s\n", name);
}

/* Expects `status` and an error message containing `needle`; frees the message. */
static void expect_error(int status, char *err, int expected, const char *needle) {
  if (status != expected)
    fprintf(stderr, "got %s (%s), expected %s\n", rw_status_str(status), err ? err : "no message",
            rw_status_str(expected));
  CHECK(status == expected);
  CHECK(err != NULL);
  if (needle != NULL && strstr(err, needle) == NULL) fprintf(stderr, "message: %s\n", err);
  CHECK(needle == NULL || strstr(err, needle) != NULL);
  rw_free(err);
}

static rw_store_t *open_store(const char *url) {
  rw_store_t *store = NULL;
  char *err = NULL;
  int st = rw_store_open(url, &store, &err);
  if (st != RW_OK) fprintf(stderr, "rw_store_open(%s): %s\n", url, err);
  CHECK(st == RW_OK && store != NULL);
  return store;
}

static rw_limiter_t *make_limiter(rw_store_t *store, const char *policy, const char *algorithm) {
  rw_options_t *o = rw_options_create();
  rw_options_set_algorithm(o, algorithm);
  rw_limiter_t *limiter = NULL;
  char *err = NULL;
  int st = rw_limiter_create(store, policy, o, &limiter, &err);
  rw_options_destroy(o);
  if (st != RW_OK) fprintf(stderr, "rw_limiter_create: %s\n", err);
  CHECK(st == RW_OK && limiter != NULL);
  return limiter;
}

static rw_decision_t hit(rw_limiter_t *l, const char *key, int64_t cost) {
  rw_decision_t d;
  char *err = NULL;
  int st = rw_hit(l, key, strlen(key), cost, &d, &err);
  if (st != RW_OK) fprintf(stderr, "rw_hit: %s\n", err);
  CHECK(st == RW_OK);
  return d;
}

static void test_version_and_status(void) {
  start_phase("version and status codes");
  CHECK(rw_version_number() == RW_VERSION_NUMBER);
  char expected[32];
  snprintf(expected, sizeof expected, "%d.%d.%d", RW_VERSION_MAJOR, RW_VERSION_MINOR, RW_VERSION_PATCH);
  CHECK(strcmp(rw_version(), expected) == 0);
  const int codes[] = {RW_OK, RW_ERR_INVALID_ARGUMENT, RW_ERR_STORE_UNAVAILABLE, RW_ERR_STORE_TIMEOUT, RW_ERR_STORE,
                       RW_ERR_NOMEM, RW_ERR_INTERNAL};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; ++i) {
    CHECK(rw_status_str(codes[i]) != NULL);
    CHECK(strcmp(rw_status_str(codes[i]), "unknown status") != 0);
    for (size_t j = 0; j < i; ++j) CHECK(strcmp(rw_status_str(codes[i]), rw_status_str(codes[j])) != 0);
  }
  CHECK(strcmp(rw_status_str(999), "unknown status") == 0);
  CHECK(strcmp(rw_status_str(-1), "unknown status") == 0);
  rw_free(NULL);
}

static void test_misuse(void) {
  start_phase("misuse");
  rw_store_t *store = NULL;
  EXPECT_ERROR(rw_store_open(NULL, &store, &err), RW_ERR_INVALID_ARGUMENT, "url");
  EXPECT_ERROR(rw_store_open("memory://", NULL, &err), RW_ERR_INVALID_ARGUMENT, "store");
  EXPECT_ERROR(rw_store_open("nosql://x", &store, &err), RW_ERR_INVALID_ARGUMENT, "nosql://x");
  EXPECT_ERROR(rw_store_open_shared(NULL, &store, &err), RW_ERR_INVALID_ARGUMENT, "url");
  EXPECT_ERROR(rw_store_open_shared("memory://", NULL, &err), RW_ERR_INVALID_ARGUMENT, "store");
  EXPECT_ERROR(rw_store_open_shared("nosql://x", &store, &err), RW_ERR_INVALID_ARGUMENT, "nosql://x");
  EXPECT_ERROR(rw_store_open("redis://u:hunter2@h:99999", &store, &err), RW_ERR_INVALID_ARGUMENT, "port");
  char *err = NULL;
  CHECK(rw_store_open("redis://u:hunter2@h:99999", &store, &err) == RW_ERR_INVALID_ARGUMENT);
  CHECK(strstr(err, "hunter2") == NULL); /* passwords never reach a message */
  rw_free(err);
  CHECK(rw_store_open("memory://?max_keys=0", &store, NULL) == RW_ERR_INVALID_ARGUMENT); /* errmsg may be NULL */
  rw_store_close(NULL);
  rw_options_destroy(NULL);
  rw_limiter_destroy(NULL);

  store = open_store("memory://");
  rw_limiter_t *limiter = NULL;
  EXPECT_ERROR(rw_limiter_create(NULL, "1/s", NULL, &limiter, &err), RW_ERR_INVALID_ARGUMENT, "store");
  EXPECT_ERROR(rw_limiter_create(store, NULL, NULL, &limiter, &err), RW_ERR_INVALID_ARGUMENT, "policy");
  EXPECT_ERROR(rw_limiter_create(store, "1/s", NULL, NULL, &err), RW_ERR_INVALID_ARGUMENT, "limiter");
  const char *bad_policies[] = {"", "often", "10/fortnight", "0/s", "10/s;", "1.5/s"};
  for (size_t i = 0; i < sizeof bad_policies / sizeof bad_policies[0]; ++i)
    EXPECT_ERROR(rw_limiter_create(store, bad_policies[i], NULL, &limiter, &err), RW_ERR_INVALID_ARGUMENT, "expected");
  rw_options_t *o = rw_options_create();
  rw_options_set_algorithm(o, "leaky");
  EXPECT_ERROR(rw_limiter_create(store, "1/s", o, &limiter, &err), RW_ERR_INVALID_ARGUMENT, "leaky");
  rw_options_set_algorithm(o, "fixed_window");
  rw_options_set_burst(o, 3);
  EXPECT_ERROR(rw_limiter_create(store, "1/s", o, &limiter, &err), RW_ERR_INVALID_ARGUMENT, "burst");
  rw_options_destroy(o);
  o = rw_options_create();
  rw_options_set_on_store_error(o, "shrug");
  EXPECT_ERROR(rw_limiter_create(store, "1/s", o, &limiter, &err), RW_ERR_INVALID_ARGUMENT, "on_store_error");
  rw_options_set_on_store_error(o, "deny");
  rw_options_set_prefix(o, "bad{prefix");
  EXPECT_ERROR(rw_limiter_create(store, "1/s", o, &limiter, &err), RW_ERR_INVALID_ARGUMENT, "prefix");
  rw_options_destroy(o);

  limiter = make_limiter(store, "3/minute", "fixed_window");
  rw_decision_t d;
  EXPECT_ERROR(rw_hit(NULL, "k", 1, 1, &d, &err), RW_ERR_INVALID_ARGUMENT, "limiter");
  EXPECT_ERROR(rw_hit(limiter, "k", 1, 1, NULL, &err), RW_ERR_INVALID_ARGUMENT, "decision");
  EXPECT_ERROR(rw_hit(limiter, NULL, 3, 1, &d, &err), RW_ERR_INVALID_ARGUMENT, "key");
  EXPECT_ERROR(rw_hit(limiter, "", 0, 1, &d, &err), RW_ERR_INVALID_ARGUMENT, "empty");
  EXPECT_ERROR(rw_hit(limiter, NULL, 0, 1, &d, &err), RW_ERR_INVALID_ARGUMENT, "empty");
  char *long_key = malloc(4097);
  memset(long_key, 'k', 4097);
  EXPECT_ERROR(rw_hit(limiter, long_key, 4097, 1, &d, &err), RW_ERR_INVALID_ARGUMENT, "4097");
  CHECK(rw_hit(limiter, long_key, 4096, 1, &d, NULL) == RW_OK);
  free(long_key);
  EXPECT_ERROR(rw_hit(limiter, "k", 1, 0, &d, &err), RW_ERR_INVALID_ARGUMENT, "cost");
  EXPECT_ERROR(rw_hit(limiter, "k", 1, -5, &d, &err), RW_ERR_INVALID_ARGUMENT, "cost");
  EXPECT_ERROR(rw_hit(limiter, "k", 1, 4, &d, &err), RW_ERR_INVALID_ARGUMENT, "between 1 and 3");
  EXPECT_ERROR(rw_peek(limiter, "k", 1, 0, &d, &err), RW_ERR_INVALID_ARGUMENT, "cost");
  EXPECT_ERROR(rw_reset(NULL, "k", 1, &err), RW_ERR_INVALID_ARGUMENT, "limiter");
  EXPECT_ERROR(rw_reset(limiter, "", 0, &err), RW_ERR_INVALID_ARGUMENT, "empty");
  const char *keys[] = {"a", ""};
  size_t lens[] = {1, 0};
  rw_decision_t many[2];
  EXPECT_ERROR(rw_hit_many(limiter, keys, lens, 2, 1, many, &err), RW_ERR_INVALID_ARGUMENT, "empty");
  CHECK(rw_peek(limiter, "a", 1, 1, &d, NULL) == RW_OK && d.remaining == 3); /* nothing charged */
  EXPECT_ERROR(rw_hit_many(limiter, NULL, lens, 2, 1, many, &err), RW_ERR_INVALID_ARGUMENT, "keys");
  CHECK(rw_hit_many(limiter, NULL, NULL, 0, 1, NULL, NULL) == RW_OK); /* an empty batch */
  EXPECT_ERROR(rw_hit_async(limiter, "k", 1, 1, NULL, NULL, &err), RW_ERR_INVALID_ARGUMENT, "callback");
  rw_limiter_destroy(limiter);
  rw_store_close(store);
}

static int64_t zero_clock(void *user_data) {
  (void)user_data;
  return 0;
}

static void ignore_hit(void *user_data, int status, const rw_decision_t *decision, const char *errmsg) {
  (void)user_data, (void)status, (void)decision, (void)errmsg;
}

static void ignore_hit_v2(void *user_data, int status, const rw_decision_v2_t *decision, const char *errmsg) {
  (void)user_data, (void)status, (void)decision, (void)errmsg;
}

static void ignore_many_v2(void *user_data, int status, const rw_decision_v2_t *decisions, size_t n,
                           const char *errmsg) {
  (void)user_data, (void)status, (void)decisions, (void)n, (void)errmsg;
}

/* Every function that takes a handle, string or out-pointer, given NULL: an error naming the parameter. */
static void test_null_arguments(void) {
  start_phase("NULL arguments");
  rw_store_t *store = NULL;
  EXPECT_ERROR(rw_store_open_with_clock(NULL, zero_clock, NULL, &store, &err), RW_ERR_INVALID_ARGUMENT, "url is NULL");
  EXPECT_ERROR(rw_store_open_with_clock("memory://", NULL, NULL, &store, &err), RW_ERR_INVALID_ARGUMENT,
               "now_us is NULL");
  EXPECT_ERROR(rw_store_open_with_clock("memory://", zero_clock, NULL, NULL, &err), RW_ERR_INVALID_ARGUMENT,
               "store is NULL");

  /* Setters return void: a NULL options does nothing, a NULL value is reported by rw_limiter_create. */
  rw_options_set_algorithm(NULL, "gcra");
  rw_options_set_burst(NULL, 5);
  rw_options_set_buckets(NULL, 5);
  rw_options_set_prefix(NULL, "p");
  rw_options_set_on_store_error(NULL, "deny");
  store = open_store("memory://");
  rw_limiter_t *limiter = NULL;
  const struct {
    void (*set)(rw_options_t *, const char *);
    const char *message;
  } setters[] = {{rw_options_set_algorithm, "rw_options_set_algorithm: algorithm is NULL"},
                 {rw_options_set_prefix, "rw_options_set_prefix: prefix is NULL"},
                 {rw_options_set_on_store_error, "rw_options_set_on_store_error: on_store_error is NULL"}};
  for (size_t i = 0; i < sizeof setters / sizeof setters[0]; ++i) {
    rw_options_t *o = rw_options_create();
    CHECK(o != NULL);
    setters[i].set(o, NULL);
    rw_options_set_algorithm(o, "gcra"); /* a later valid value does not hide the misuse */
    EXPECT_ERROR(rw_limiter_create(store, "1/s", o, &limiter, &err), RW_ERR_INVALID_ARGUMENT, setters[i].message);
    CHECK(limiter == NULL);
    rw_options_destroy(o);
  }
  rw_options_t *o = rw_options_create();
  rw_options_set_prefix(o, NULL);
  rw_options_set_on_store_error(o, NULL); /* the first misuse is the one reported */
  EXPECT_ERROR(rw_limiter_create(store, "1/s", o, &limiter, &err), RW_ERR_INVALID_ARGUMENT, "prefix is NULL");
  rw_options_destroy(o);

  limiter = make_limiter(store, "3/minute", "fixed_window");
  rw_decision_t d;
  EXPECT_ERROR(rw_peek(NULL, "k", 1, 1, &d, &err), RW_ERR_INVALID_ARGUMENT, "limiter is NULL");
  EXPECT_ERROR(rw_peek(limiter, "k", 1, 1, NULL, &err), RW_ERR_INVALID_ARGUMENT, "decision is NULL");
  EXPECT_ERROR(rw_peek(limiter, NULL, 1, 1, &d, &err), RW_ERR_INVALID_ARGUMENT, "key is NULL");
  EXPECT_ERROR(rw_reset(limiter, NULL, 1, &err), RW_ERR_INVALID_ARGUMENT, "key is NULL");
  const char *keys[] = {"a", NULL};
  size_t lens[] = {1, 1};
  rw_decision_t many[2];
  EXPECT_ERROR(rw_hit_many(NULL, keys, lens, 2, 1, many, &err), RW_ERR_INVALID_ARGUMENT, "limiter is NULL");
  EXPECT_ERROR(rw_hit_many(limiter, keys, NULL, 2, 1, many, &err), RW_ERR_INVALID_ARGUMENT, "keylens is NULL");
  EXPECT_ERROR(rw_hit_many(limiter, keys, lens, 2, 1, NULL, &err), RW_ERR_INVALID_ARGUMENT, "decisions is NULL");
  EXPECT_ERROR(rw_hit_many(limiter, keys, lens, 2, 1, many, &err), RW_ERR_INVALID_ARGUMENT, "keys[1] is NULL");
  EXPECT_ERROR(rw_hit_async(NULL, "k", 1, 1, ignore_hit, NULL, &err), RW_ERR_INVALID_ARGUMENT, "limiter is NULL");
  EXPECT_ERROR(rw_hit_async(limiter, NULL, 1, 1, ignore_hit, NULL, &err), RW_ERR_INVALID_ARGUMENT, "key is NULL");
  rw_decision_v2_t d2, many2[2];
  EXPECT_ERROR(rw_hit_v2(NULL, "k", 1, 1, &d2, &err), RW_ERR_INVALID_ARGUMENT, "limiter is NULL");
  EXPECT_ERROR(rw_peek_v2(limiter, "k", 1, 1, NULL, &err), RW_ERR_INVALID_ARGUMENT, "decision is NULL");
  EXPECT_ERROR(rw_hit_many_v2(limiter, keys, lens, 2, 1, NULL, &err), RW_ERR_INVALID_ARGUMENT, "decisions is NULL");
  EXPECT_ERROR(rw_hit_many_v2(limiter, keys, lens, 2, 1, many2, &err), RW_ERR_INVALID_ARGUMENT, "keys[1] is NULL");
  EXPECT_ERROR(rw_hit_async_v2(limiter, "k", 1, 1, NULL, NULL, &err), RW_ERR_INVALID_ARGUMENT, "callback is NULL");
  EXPECT_ERROR(rw_peek_async_v2(limiter, NULL, 1, 1, ignore_hit_v2, NULL, &err), RW_ERR_INVALID_ARGUMENT,
               "key is NULL");
  EXPECT_ERROR(rw_hit_many_async_v2(limiter, NULL, lens, 2, 1, ignore_many_v2, NULL, &err), RW_ERR_INVALID_ARGUMENT,
               "keys is NULL");
  CHECK(rw_peek(limiter, "a", 1, 1, &d, NULL) == RW_OK && d.remaining == 3); /* nothing charged */
  rw_limiter_destroy(limiter);
  rw_store_close(store);
}

/* A caller may reuse `err` without freeing it (LevelDB's rule): the old message is freed (ASan's leak check sees
 * it), and success leaves the message in place. */
static void test_errmsg_reuse(void) {
  start_phase("errmsg reused without rw_free");
  rw_store_t *store = NULL;
  char *err = NULL;
  CHECK(rw_store_open("nosql://first", &store, &err) == RW_ERR_INVALID_ARGUMENT && strstr(err, "first") != NULL);
  CHECK(rw_store_open("nosql://second", &store, &err) == RW_ERR_INVALID_ARGUMENT && strstr(err, "second") != NULL);
  char *kept = err;
  CHECK(rw_store_open("memory://", &store, &err) == RW_OK && err == kept);
  rw_store_close(store);
  rw_free(err);
}

static rw_limiter_t *make_limiter_with(rw_store_t *store, const char *policy, const char *algorithm,
                                       const char *prefix, const char *on_store_error) {
  rw_options_t *o = rw_options_create();
  rw_options_set_algorithm(o, algorithm);
  rw_options_set_prefix(o, prefix);
  rw_options_set_on_store_error(o, on_store_error);
  rw_limiter_t *limiter = NULL;
  char *err = NULL;
  int st = rw_limiter_create(store, policy, o, &limiter, &err);
  rw_options_destroy(o);
  if (st != RW_OK) fprintf(stderr, "rw_limiter_create: %s\n", err);
  CHECK(st == RW_OK);
  return limiter;
}

/* Asynchronous hits: the callback counts; the test waits for all of them. */
struct async_state {
  atomic_int done;
  atomic_int allowed;
  atomic_int failed;
  atomic_int last_status;
};

static void on_hit(void *user_data, int status, const rw_decision_t *decision, const char *errmsg) {
  struct async_state *s = user_data;
  if (status == RW_OK) {
    CHECK(decision != NULL && errmsg == NULL);
    if (decision->allowed) atomic_fetch_add(&s->allowed, 1);
  } else {
    CHECK(decision == NULL && errmsg != NULL && strlen(errmsg) > 0);
    atomic_fetch_add(&s->failed, 1);
  }
  atomic_store(&s->last_status, status);
  atomic_fetch_add(&s->done, 1);
}

static void wait_for(struct async_state *s, int n) {
  for (int i = 0; i < 1000 && atomic_load(&s->done) < n; ++i) nanosleep(&(struct timespec){0, 10000000}, NULL);
  CHECK(atomic_load(&s->done) == n);
}

static void test_operations(const char *url, const char *prefix) {
  start_phase(url);
  rw_store_t *store = open_store(url);
  const char *algorithms[] = {"fixed_window", "sliding_log", "sliding_window", "token_bucket", "gcra"};
  for (size_t a = 0; a < 5; ++a) {
    rw_limiter_t *limiter = make_limiter_with(store, "5/minute", algorithms[a], prefix, "raise");
    const char key[] = "user\0with-nul";
    const size_t keylen = sizeof key - 1;
    CHECK(rw_reset(limiter, key, keylen, NULL) == RW_OK);
    CHECK(rw_reset(limiter, "user", 4, NULL) == RW_OK);
    rw_decision_t d;
    for (int i = 0; i < 5; ++i) {
      CHECK(rw_hit(limiter, key, keylen, 1, &d, NULL) == RW_OK);
      CHECK(d.allowed == 1 && d.limit == 5 && d.remaining == 4 - i && d.retry_after_us == 0);
    }
    CHECK(rw_hit(limiter, key, keylen, 1, &d, NULL) == RW_OK);
    CHECK(d.allowed == 0 && d.remaining == 0 && d.used == 5);
    /* At most a period, but sliding_window's oldest bucket can hold out one bucket (6 s here) longer. */
    CHECK(d.retry_after_us > 0 && d.retry_after_us <= 66000000);
    CHECK(rw_peek(limiter, key, keylen, 1, &d, NULL) == RW_OK && d.allowed == 0);
    CHECK(hit(limiter, "user", 5).allowed == 1); /* "user" is another key than "user\0with-nul" */
    CHECK(rw_reset(limiter, key, keylen, NULL) == RW_OK);
    CHECK(rw_peek(limiter, key, keylen, 5, &d, NULL) == RW_OK && d.allowed == 1 && d.remaining == 5);

    const char *keys[] = {"m1", "m2", "m1"};
    const size_t lens[] = {2, 2, 2};
    rw_decision_t many[3];
    CHECK(rw_reset(limiter, "m1", 2, NULL) == RW_OK && rw_reset(limiter, "m2", 2, NULL) == RW_OK);
    CHECK(rw_hit_many(limiter, keys, lens, 3, 2, many, NULL) == RW_OK);
    CHECK(many[0].remaining == 3 && many[1].remaining == 3 && many[2].remaining == 1);

    struct async_state s = {0};
    CHECK(rw_reset(limiter, "async", 5, NULL) == RW_OK);
    for (int i = 0; i < 20; ++i) CHECK(rw_hit_async(limiter, "async", 5, 1, on_hit, &s, NULL) == RW_OK);
    rw_limiter_destroy(limiter); /* the pending hits keep it alive */
    wait_for(&s, 20);
    CHECK(atomic_load(&s.allowed) == 5 && atomic_load(&s.failed) == 0);
  }

  rw_limiter_t *multi = make_limiter_with(store, "2/second; 4/minute", "sliding_log", prefix, "raise");
  CHECK(rw_reset(multi, "multi", 5, NULL) == RW_OK);
  CHECK(hit(multi, "multi", 1).allowed && hit(multi, "multi", 1).allowed);
  rw_decision_t denied = hit(multi, "multi", 1);
  CHECK(denied.allowed == 0 && denied.limit == 2 && denied.retry_after_us <= 1000000);
  rw_limiter_destroy(multi);
  rw_store_close(store);
}

/* The _v2 calls: the same decisions as the original ones, plus the policy they report. "10/second; 10 per 2 seconds"
 * (fixed windows): 5 hits tie (the first policy is reported), then 1.5 s later the 1-second window has restarted
 * (9 left) and the 2-second one has 4 left, so the 2-second policy is reported: nothing but policy_index tells. */
static _Atomic int64_t v2_now_us;

static int64_t v2_clock(void *user_data) {
  (void)user_data;
  return atomic_load(&v2_now_us);
}

struct v2_answers {
  atomic_int done;
  rw_decision_v2_t decision;  /* the last single decision */
  rw_decision_v2_t many[2];
};

static void on_hit_v2(void *user_data, int status, const rw_decision_v2_t *decision, const char *errmsg) {
  struct v2_answers *a = user_data;
  CHECK(status == RW_OK && decision != NULL && errmsg == NULL);
  a->decision = *decision;
  atomic_fetch_add(&a->done, 1);
}

static void on_many_v2(void *user_data, int status, const rw_decision_v2_t *decisions, size_t n, const char *errmsg) {
  struct v2_answers *a = user_data;
  CHECK(status == RW_OK && decisions != NULL && n == 2 && errmsg == NULL);
  memcpy(a->many, decisions, sizeof a->many);
  atomic_fetch_add(&a->done, 1);
}

static void wait_v2(struct v2_answers *a, int n) {
  for (int i = 0; i < 1000 && atomic_load(&a->done) < n; ++i) nanosleep(&(struct timespec){0, 10000000}, NULL);
  CHECK(atomic_load(&a->done) == n);
}

static void test_policy_index(const char *url, const char *prefix) {
  start_phase("policy_index (_v2 calls)");
  atomic_store(&v2_now_us, 1702080000000000);
  rw_store_t *store = NULL;
  CHECK(rw_store_open_with_clock(url, v2_clock, NULL, &store, NULL) == RW_OK);
  rw_limiter_t *limiter = make_limiter_with(store, "10/second; 10 per 2 seconds", "fixed_window", prefix, "raise");
  const char *keys[] = {"v2-a", "v2-b", "v2-c"};
  const size_t lens[] = {4, 4, 4};
  for (int k = 0; k < 3; ++k) CHECK(rw_reset(limiter, keys[k], lens[k], NULL) == RW_OK);

  rw_decision_v2_t d2;
  for (int i = 0; i < 5; ++i) {
    CHECK(rw_hit_v2(limiter, "v2-a", 4, 1, &d2, NULL) == RW_OK);
    CHECK(d2.allowed == 1 && d2.remaining == 9 - i && d2.policy_index == 0);
  }
  rw_decision_v2_t many[2];
  CHECK(rw_hit_many_v2(limiter, keys + 1, lens + 1, 2, 5, many, NULL) == RW_OK);
  CHECK(many[0].remaining == 5 && many[0].policy_index == 0 && many[1].remaining == 5 && many[1].policy_index == 0);

  atomic_store(&v2_now_us, 1702080000000000 + 1500000);
  CHECK(rw_hit_v2(limiter, "v2-a", 4, 1, &d2, NULL) == RW_OK);
  CHECK(d2.allowed == 1 && d2.limit == 10 && d2.remaining == 4 && d2.used == 6 && d2.policy_index == 1);
  rw_decision_t d;
  CHECK(rw_peek(limiter, "v2-a", 4, 1, &d, NULL) == RW_OK);
  CHECK(rw_peek_v2(limiter, "v2-a", 4, 1, &d2, NULL) == RW_OK);  /* the same numbers as the original call */
  CHECK(d.allowed == d2.allowed && d.limit == d2.limit && d.remaining == d2.remaining &&
        d.reset_after_us == d2.reset_after_us && d.retry_after_us == d2.retry_after_us && d.used == d2.used);
  CHECK(d2.remaining == 4 && d2.policy_index == 1);  /* a peek consumes nothing */

  struct v2_answers a = {0};
  CHECK(rw_peek_async_v2(limiter, "v2-b", 4, 1, on_hit_v2, &a, NULL) == RW_OK);
  wait_v2(&a, 1);
  CHECK(a.decision.remaining == 5 && a.decision.policy_index == 1);
  CHECK(rw_hit_async_v2(limiter, "v2-b", 4, 1, on_hit_v2, &a, NULL) == RW_OK);
  wait_v2(&a, 2);
  CHECK(a.decision.allowed == 1 && a.decision.remaining == 4 && a.decision.used == 6 && a.decision.policy_index == 1);
  CHECK(rw_hit_many_async_v2(limiter, keys + 1, lens + 1, 2, 1, on_many_v2, &a, NULL) == RW_OK);
  wait_v2(&a, 3);
  CHECK(a.many[0].remaining == 3 && a.many[0].policy_index == 1);
  CHECK(a.many[1].remaining == 4 && a.many[1].policy_index == 1);
  rw_limiter_destroy(limiter);
  rw_store_close(store);
}

static void redis_cli(int port, const char *args) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "redis-cli -p %d %s >/dev/null", port, args);
  CHECK(system(cmd) == 0);
}

static void test_store_failures(struct redis_server *server) {
  start_phase("store failures");
  char url[128];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d?timeout=200ms&pool=1", free_port());
  rw_store_t *dead = open_store(url);
  rw_limiter_t *raise = make_limiter_with(dead, "5/minute", "gcra", "rw", "raise");
  rw_decision_t d;
  EXPECT_ERROR(rw_hit(raise, "k", 1, 1, &d, &err), RW_ERR_STORE_UNAVAILABLE, "cannot connect");
  struct async_state s = {0};
  CHECK(rw_hit_async(raise, "k", 1, 1, on_hit, &s, NULL) == RW_OK);
  wait_for(&s, 1);
  CHECK(atomic_load(&s.failed) == 1 && atomic_load(&s.last_status) == RW_ERR_STORE_UNAVAILABLE);
  rw_limiter_t *open = make_limiter_with(dead, "5/minute", "gcra", "rw", "allow");
  CHECK(rw_hit(open, "k", 1, 1, &d, NULL) == RW_OK && d.allowed == 1);
  rw_limiter_t *closed = make_limiter_with(dead, "5/minute", "gcra", "rw", "deny");
  CHECK(rw_hit(closed, "k", 1, 1, &d, NULL) == RW_OK && d.allowed == 0 && d.retry_after_us > 0);
  rw_limiter_destroy(raise);
  rw_limiter_destroy(open);
  rw_limiter_destroy(closed);
  rw_store_close(dead);

  /* A timeout long enough for a busy machine's answers: the hung server below is stopped, not slow. */
  snprintf(url, sizeof url, "redis://127.0.0.1:%d?timeout=2s&pool=1", server->port);
  rw_store_t *live = open_store(url);
  rw_limiter_t *limiter = make_limiter_with(live, "5/minute", "fixed_window", "failures", "raise");
  CHECK(hit(limiter, "k", 1).allowed);
  redis_cli(server->port, "CONFIG SET maxmemory 1");
  EXPECT_ERROR(rw_hit(limiter, "k", 1, 1, &d, &err), RW_ERR_STORE, "OOM");
  redis_cli(server->port, "CONFIG SET maxmemory 0");
  redis_control(server, "stop"); /* SIGSTOP: stopped when it returns */
  EXPECT_ERROR(rw_hit(limiter, "k", 1, 1, &d, &err), RW_ERR_STORE_TIMEOUT, "timeout");
  redis_control(server, "cont");
  CHECK(hit(limiter, "k", 1).allowed); /* served again, with nothing done by the caller */
  rw_limiter_destroy(limiter);
  rw_store_close(live);
}

/* The memory store counts what it holds and the live states it had to drop; Redis reports zeros. */
static void test_store_stats(const char *redis_url) {
  start_phase("store stats");
  rw_store_t *store = open_store("memory://?max_keys=64");
  rw_limiter_t *limiter = make_limiter(store, "1/hour", "fixed_window");
  rw_store_stats_t s;
  CHECK(rw_store_stats(store, &s, NULL) == RW_OK);
  CHECK(s.keys == 0 && s.max_keys == 64 && s.evictions == 0);
  char key[32];
  for (int i = 0; i < 100; ++i) {
    snprintf(key, sizeof key, "k%d", i);
    CHECK(hit(limiter, key, 1).allowed);
  }
  CHECK(rw_store_stats(store, &s, NULL) == RW_OK);
  CHECK(s.keys == 64 && s.max_keys == 64 && s.evictions == 36);
  char *err = NULL;
  int st = rw_store_stats(store, NULL, &err);
  expect_error(st, err, RW_ERR_INVALID_ARGUMENT, "stats is NULL");
  rw_limiter_destroy(limiter);
  rw_store_close(store);

  store = open_store(redis_url);
  CHECK(rw_store_stats(store, &s, NULL) == RW_OK);
  CHECK(s.keys == 0 && s.max_keys == 0 && s.evictions == 0);
  rw_sync_stats_t sync;
  CHECK(rw_store_sync_stats(store, &sync, NULL) == RW_OK);
  CHECK(sync.local_denials == 0 && sync.store_calls == 0 && sync.sync_lag_us == -1);
  rw_store_close(store);

  /* local_first: once the store has denied a key, its denials are answered in-process. */
  char url[512];
  snprintf(url, sizeof url, "%s?mode=local_first", redis_url);
  store = open_store(url);
  limiter = make_limiter(store, "1/hour", "fixed_window");
  char flood[64];
  snprintf(flood, sizeof flood, "c-flood-%ld", (long)getpid());
  CHECK(hit(limiter, flood, 1).allowed);
  for (int i = 0; i < 2000; ++i) {
    CHECK(!hit(limiter, flood, 1).allowed);
    CHECK(rw_store_sync_stats(store, &sync, NULL) == RW_OK);
    if (sync.local_denials > 0) break;
    nanosleep(&(struct timespec){0, 1000000}, NULL); /* until the reset log has been read once */
  }
  CHECK(rw_store_sync_stats(store, &sync, NULL) == RW_OK);
  CHECK(sync.local_denials > 0 && sync.store_calls >= 2 && sync.sync_lag_us >= 0);
  err = NULL;
  st = rw_store_sync_stats(store, NULL, &err);
  expect_error(st, err, RW_ERR_INVALID_ARGUMENT, "stats is NULL");
  rw_limiter_destroy(limiter);
  rw_store_close(store);
}

/* Figures and events (docs/observability.md): a named limiter's decisions; a store's calls by outcome; the event
 * of a store that stops answering; a caller's older, shorter struct filled only as far as it knows. */
static atomic_int events_seen;
static char first_event[256];
static void on_event(const rw_event_t *event, void *user_data) {
  CHECK(user_data == &events_seen);
  if (atomic_fetch_add(&events_seen, 1) == 0)
    snprintf(first_event, sizeof first_event, "%s %d %s", event->kind_name, event->warning, event->store);
}

static void test_metrics(void) {
  start_phase("metrics");
  rw_store_t *store = open_store("memory://");
  rw_options_t *options = rw_options_create();
  rw_options_set_name(options, "c-login");
  rw_limiter_t *limiter = NULL;
  CHECK(rw_limiter_create(store, "2/minute", options, &limiter, NULL) == RW_OK);
  rw_options_destroy(options);
  CHECK(strcmp(rw_limiter_name(limiter), "c-login") == 0);
  for (int i = 0; i < 3; ++i) hit(limiter, "k", 1);
  rw_limiter_metrics_t m = {.size = sizeof m};
  CHECK(rw_limiter_metrics(limiter, &m, NULL) == RW_OK);
  CHECK(m.size == sizeof m && m.allowed == 2 && m.denied == 1 && m.cost == 2 && m.fallbacks == 0);
  struct {
    size_t size;
    int64_t allowed;
  } older = {sizeof older, -1};  /* a caller built against a version that knew only `allowed` */
  CHECK(rw_limiter_metrics(limiter, (rw_limiter_metrics_t *)&older, NULL) == RW_OK);
  CHECK(older.size == sizeof older && older.allowed == 2);
  rw_limiter_destroy(limiter);
  rw_store_close(store);
  CHECK(rw_duration_bucket_bounds()[0] == 0.0001 && rw_duration_bucket_bounds()[RW_DURATION_BUCKETS - 2] == 2.5);

  rw_set_event_handler(on_event, &events_seen);
  char url[128];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d?timeout=200ms&circuit_failures=1", free_port());
  store = open_store(url);
  limiter = make_limiter_with(store, "5/minute", "gcra", "rw", "deny");
  rw_decision_t d;
  CHECK(rw_hit(limiter, "k", 1, 1, &d, NULL) == RW_OK && d.allowed == 0);
  CHECK(rw_limiter_metrics(limiter, &m, NULL) == RW_OK && m.denied == 1 && m.fallbacks == 1);
  rw_store_metrics_t sm = {.size = sizeof sm};
  CHECK(rw_store_metrics(store, &sm, NULL) == RW_OK);
  CHECK(sm.calls[RW_CALL_UNAVAILABLE] == 1 && sm.calls[RW_CALL_OK] == 0 && sm.circuits_open == 1);
  int64_t in_buckets = 0;
  for (int b = 0; b < RW_DURATION_BUCKETS; ++b) in_buckets += sm.duration_buckets[RW_CALL_UNAVAILABLE][b];
  CHECK(in_buckets == 1);
  for (int i = 0; i < 20000 && atomic_load(&events_seen) < 2; ++i) nanosleep(&(struct timespec){0, 1000000}, NULL);
  CHECK(atomic_load(&events_seen) >= 2); /* store_failed and circuit_opened */
  CHECK(strncmp(first_event, "store_failed 1 redis://", 23) == 0 || strncmp(first_event, "circuit_opened 1 ", 17) == 0);
  rw_set_event_handler(NULL, NULL);
  char *err = NULL;
  int st = rw_store_metrics(store, NULL, &err);
  expect_error(st, err, RW_ERR_INVALID_ARGUMENT, "metrics is NULL");
  rw_limiter_destroy(limiter);
  rw_store_close(store);
}

/* Reservations (docs/c.md, "Pacing"): a second caller on "1/s" waits about a second, gives its slot back, and the
 * next caller gets that slot; the asynchronous form; a window algorithm and bad arguments are refused. */
static atomic_int reserved_async;
static int64_t next_ticket; /* the slot after the last one reserved: gcra "1/second", burst 1, a ticket per second */
static void on_reserved(void *user_data, int status, const rw_reservation_t *r, const char *errmsg) {
  (void)user_data;
  if (status != RW_OK || r == NULL || r->ticket != next_ticket)
    fprintf(stderr, "rw_reserve_async: status %d (%s), ticket %lld, expected %lld\n", status, errmsg ? errmsg : "",
            r ? (long long)r->ticket : 0LL, (long long)next_ticket);
  CHECK(status == RW_OK && r != NULL && r->decision.allowed == 1 && r->ticket == next_ticket);
  atomic_store(&reserved_async, 1);
}

static void test_reservations(const char *url) {
  start_phase("reservations");
  rw_store_t *store = open_store(url);
  rw_limiter_t *api = make_limiter(store, "1/second", "gcra");
  const char *key = "partner-api";
  size_t keylen = strlen(key);
  char *err = NULL;
  rw_reservation_t first, slot, again;
  CHECK(rw_reserve(api, key, keylen, 1, 0, &first, &err) == RW_OK && first.decision.allowed && first.wait_us == 0);
  /* The pacing loop of docs/c.md: reserve, then sleep until the slot. */
  rw_reservation_t r;
  if (rw_reserve(api, key, keylen, 1, 5000000 /* 5 s at most */, &r, &err) == RW_OK && r.decision.allowed) {
    struct timespec ts = {r.wait_us / 1000000, (long)(r.wait_us % 1000000) * 1000};
    nanosleep(&ts, NULL);
  }
  /* The next slot, one second after the first (the tickets are the store's instants: no timing in the check). */
  CHECK(r.decision.allowed && r.wait_us > 0 && r.wait_us <= 1000000 && r.ticket == first.ticket + 1000000);
  CHECK(rw_reserve(api, key, keylen, 1, 0, &slot, &err) == RW_OK);
  CHECK(slot.decision.allowed == 0 && slot.decision.retry_after_us > 0); /* nothing charged: */
  CHECK(rw_reserve(api, key, keylen, 1, 5000000, &slot, &err) == RW_OK && slot.decision.allowed);
  int given = -1;
  CHECK(rw_cancel(api, key, keylen, 1, &slot, &given, &err) == RW_OK && given == 1);
  CHECK(rw_cancel(api, key, keylen, 1, &slot, &given, &err) == RW_OK && given == 0); /* once */
  CHECK(rw_reserve(api, key, keylen, 1, 5000000, &again, &err) == RW_OK && again.ticket == slot.ticket);
  next_ticket = again.ticket + 1000000;
  atomic_store(&reserved_async, 0);
  CHECK(rw_reserve_async(api, key, keylen, 1, 5000000, on_reserved, NULL, &err) == RW_OK);
  for (int i = 0; i < 5000 && !atomic_load(&reserved_async); ++i) nanosleep(&(struct timespec){0, 1000000}, NULL);
  CHECK(atomic_load(&reserved_async) == 1);
  EXPECT_ERROR(rw_reserve(api, key, keylen, 1, -1, &r, &err), RW_ERR_INVALID_ARGUMENT, "max_wait");
  EXPECT_ERROR(rw_reserve(api, key, keylen, 1, 0, NULL, &err), RW_ERR_INVALID_ARGUMENT, "reservation is NULL");
  EXPECT_ERROR(rw_cancel(api, key, keylen, 1, &slot, NULL, &err), RW_ERR_INVALID_ARGUMENT, "given is NULL");
  rw_limiter_t *window = make_limiter(store, "1/second", "fixed_window");
  EXPECT_ERROR(rw_reserve(window, key, keylen, 1, 0, &r, &err), RW_ERR_INVALID_ARGUMENT, "gcra or token_bucket");
  rw_free(err);
  rw_limiter_destroy(window);
  rw_limiter_destroy(api);
  rw_store_close(store);
}

/* rw_store_open_shared: a memory:// URL opens a new store each time; a shared URL's handle outlives the closing of
 * the others (that they hold one store is tested in the core: store_contract_test, OpenedOncePerProcessWhenShared). */
static void test_open_shared(const char *url, int shared) {
  start_phase(url);
  rw_store_t *first = NULL, *second = NULL;
  CHECK(rw_store_open_shared(url, &first, NULL) == RW_OK && first != NULL);
  CHECK(rw_store_open_shared(url, &second, NULL) == RW_OK && second != NULL && second != first);
  rw_limiter_t *a = make_limiter_with(first, "1/minute", "fixed_window", "capi-shared", "raise");
  rw_limiter_t *b = make_limiter_with(second, "1/minute", "fixed_window", "capi-shared", "raise");
  CHECK(rw_reset(a, "k", 1, NULL) == RW_OK);
  CHECK(hit(a, "k", 1).allowed == 1);
  rw_limiter_destroy(a);
  rw_store_close(first);
  CHECK(hit(b, "k", 1).allowed == !shared);
  rw_limiter_destroy(b);
  rw_store_close(second);
}

/* Key lists: an entry added is seen by another handle of the list on the store, then removed; bad names and
 * durations are refused with a message. */
static void test_key_lists(const char *url) {
  start_phase(url);
  rw_store_t *store = open_store(url);
  rw_key_list_t *a = NULL, *b = NULL, *bad = NULL;
  CHECK(rw_key_list_create(store, "capi-blocked", 900000000, &a, NULL) == RW_OK);
  CHECK(rw_key_list_create(store, "capi-blocked", 900000000, &b, NULL) == RW_OK);
  const char key[] = "203.0.113.7\0x";
  int in = -1;
  int64_t left = -1;
  CHECK(rw_key_list_remove(a, key, sizeof key - 1, NULL) == RW_OK);
  CHECK(rw_key_list_add(a, key, sizeof key - 1, NULL) == RW_OK);
  CHECK(rw_key_list_contains(b, key, sizeof key - 1, &in, &left, NULL) == RW_OK && in == 1);
  CHECK(left > 899000000 && left <= 900000000);
  CHECK(rw_key_list_contains(b, key, 11, &in, NULL, NULL) == RW_OK && in == 0); /* "203.0.113.7": another key */
  CHECK(rw_key_list_remove(b, key, sizeof key - 1, NULL) == RW_OK);
  CHECK(rw_key_list_contains(a, key, sizeof key - 1, &in, &left, NULL) == RW_OK && in == 0 && left == 0);
  EXPECT_ERROR(rw_key_list_create(store, "a b", 0, &bad, &err), RW_ERR_INVALID_ARGUMENT, "KeyList name");
  EXPECT_ERROR(rw_key_list_create(store, "l", 999, &bad, &err), RW_ERR_INVALID_ARGUMENT, "duration");
  EXPECT_ERROR(rw_key_list_create(NULL, "l", 0, &bad, &err), RW_ERR_INVALID_ARGUMENT, "store");
  EXPECT_ERROR(rw_key_list_contains(a, key, 1, NULL, NULL, &err), RW_ERR_INVALID_ARGUMENT, "contains");
  CHECK(bad == NULL);
  rw_key_list_destroy(a);
  rw_key_list_destroy(b);
  rw_key_list_destroy(NULL);
  rw_store_close(store);
}

int main(void) {
  test_version_and_status();
  test_misuse();
  test_null_arguments();
  test_errmsg_reuse();
  test_operations("memory://", "rw");
  test_policy_index("memory://", "rw");
  test_reservations("memory://");
  test_open_shared("memory://", 0);
  test_key_lists("memory://");
  test_metrics();

  struct redis_server *redis = start_redis("");
  test_operations(redis->url, "capi");
  test_policy_index(redis->url, "capi-v2");
  test_store_failures(redis);
  test_store_stats(redis->url);
  test_reservations(redis->url);
  test_open_shared(redis->url, 1);
  test_key_lists(redis->url);
  stop_redis(redis);

  printf("%d passed, 0 failed\n", atomic_load(&checks));
  return 0;
}
