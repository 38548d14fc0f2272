// The PostgreSQL store against a real PostgreSQL 15 on loopback (started and removed by tests/servers/launch.py).
// The differential fuzz against the memory store is in differential_test.cpp.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "conformance.hpp"
#include "redis_server.hpp"
#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

using Ms = std::chrono::milliseconds;

PostgresServer& server() { return shared_postgres_server(); }

std::shared_ptr<Store> postgres(const std::string& query = "") {
  return open_store(server().url(query.empty() ? "?timeout=5s" : query));
}

template <class F>
int64_t elapsed_ms(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration_cast<Ms>(std::chrono::steady_clock::now() - t0).count();
}

int64_t count_rows(const PostgresServer& s, const std::string& where = "true",
                   const std::string& table = "ratewarden.limits") {
  return std::stoll(s.sql("SELECT count(*) FROM " + table + " WHERE " + where));
}

class PostgresConformance : public ::testing::TestWithParam<size_t> {};

TEST_P(PostgresConformance, MatchesTheVectors) {
  ManualClock clock;
  run_conformance_case(GetParam(), open_store(server().url("?timeout=5s"), clock.clock()),
                       [&](int64_t now) { clock.set(now); });
}

INSTANTIATE_TEST_SUITE_P(Vectors, PostgresConformance, ::testing::ValuesIn(conformance_cases()),
                         conformance_case_name);

TEST(PostgresStore, UsesTheDatabaseClockByDefault) {
  Limiter limiter("2/second", postgres(), with_algorithm(Algorithm::gcra));
  limiter.reset("k");
  EXPECT_TRUE(limiter.hit("k").allowed);
  EXPECT_TRUE(limiter.hit("k").allowed);
  const Decision d = limiter.hit("k");
  EXPECT_FALSE(d.allowed);
  EXPECT_GT(d.retry_after_us, 0);
  EXPECT_LE(d.retry_after_us, 500000);
  std::this_thread::sleep_for(Ms(d.retry_after_us / 1000 + 20));
  EXPECT_TRUE(limiter.hit("k").allowed);
}

TEST(PostgresStore, KeysOfAnyBytesStayInTheirPlace) {
  Limiter limiter("1/minute", postgres("?prefix=bin"));
  const std::string nasty("a\0}{']]--\r\n\"end\\x00", 20);
  limiter.reset(nasty);
  EXPECT_TRUE(limiter.hit(nasty).allowed);
  EXPECT_FALSE(limiter.hit(nasty).allowed);
  EXPECT_TRUE(limiter.hit(std::string("a\0}", 3)).allowed);
  const std::string key = limiter.storage_key(nasty, 0);
  std::string hex;
  for (unsigned char c : key) hex += "0123456789abcdef"[c >> 4], hex += "0123456789abcdef"[c & 15];
  EXPECT_EQ(count_rows(server(), "key = '\\x" + hex + "'::bytea"), 1);
}

// Pipelined calls, each a transaction of its own; a key's calls are decided in the batch's order whatever the pool
// (the batch leaves on one connection).
TEST(PostgresStore, HitManyIsIndependentCalls) {
  for (int pool : {1, 3, 8}) {
    Limiter limiter("2/minute", postgres("?timeout=5s&prefix=many" + std::to_string(pool) + "&pool=" +
                                         std::to_string(pool)));
    expect_hit_many_in_order(limiter, "pool " + std::to_string(pool) + ": k", 100);
  }
}

TEST(PostgresStore, PeeksAndDenialsWriteNothing) {
  auto store = postgres("?prefix=peek");
  Limiter limiter("1/minute", store);
  const int64_t before = count_rows(server());
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(limiter.peek("only-peeked" + std::to_string(i)).allowed);
  EXPECT_EQ(count_rows(server()), before);
  EXPECT_EQ(count_rows(server(), "key::text LIKE '%only-peeked%'"), 0);
}

TEST(PostgresStore, DescribeMasksThePassword) {
  auto store = open_store("postgres://alice:s3cret@127.0.0.1:1/db?timeout=100ms&connect_timeout=100ms");
  EXPECT_EQ(store->describe().find("s3cret"), std::string::npos) << store->describe();
  EXPECT_NE(store->describe().find("alice:***@"), std::string::npos) << store->describe();
  try {
    store->check();
    ADD_FAILURE() << "nobody listens on port 1";
  } catch (const StoreError& e) {
    EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(open_store("postgresql://127.0.0.1/db")->traits().shared);
  // The default timeout: 1 s, what a hit on a hot key may wait for its row lock (docs/deployment.md, "Hot keys").
  EXPECT_NE(open_store("postgres://127.0.0.1/db")->describe().find("&timeout=1000ms&"), std::string::npos)
      << open_store("postgres://127.0.0.1/db")->describe();
  EXPECT_THROW(open_store("postgres://127.0.0.1/db?table=Robert');DROP"), InvalidArgument);
  EXPECT_THROW(open_store("postgres://127.0.0.1/db?schema="), InvalidArgument);
  EXPECT_THROW(open_store("postgres://127.0.0.1/db?pool=0"), InvalidArgument);
  EXPECT_THROW(open_store("postgres://127.0.0.1/db?colour=blue"), InvalidArgument);
  EXPECT_THROW(open_store("postgres://127.0.0.1:99999/db"), InvalidArgument);
}

TEST(PostgresStore, SchemaOptions) {
  // create=0 on a schema nobody made: a StoreError that says what to do, never a decision.
  Limiter missing("1/minute", postgres("?schema=nowhere&create=0"));
  try {
    missing.hit("k");
    ADD_FAILURE() << "decided without a schema";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("create=0"), std::string::npos) << e.what();
  }
  // unlogged=0: a logged table; the default is UNLOGGED with a fillfactor for HOT updates.
  Limiter logged("1/minute", postgres("?schema=durable&table=kept&unlogged=0"));
  EXPECT_TRUE(logged.hit("k").allowed);
  EXPECT_EQ(server().sql("SELECT relpersistence FROM pg_class WHERE oid = 'durable.kept'::regclass"), "p");
  Limiter volatile_("1/minute", postgres());
  volatile_.hit("k");
  EXPECT_EQ(server().sql("SELECT relpersistence FROM pg_class WHERE oid = 'ratewarden.limits'::regclass"), "u");
  EXPECT_EQ(server().sql("SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = 'ratewarden.limits'::regclass")
                .find("fillfactor=70"),
            0u);
  // Once made, create=0 finds it.
  Limiter found("1/minute", postgres("?schema=durable&table=kept&create=0&prefix=found"));
  EXPECT_TRUE(found.hit("k").allowed);
}

// The documented way to create the schema by hand (scripts/postgres_schema.sh | psql), then stores with create=0.
TEST(PostgresStore, SchemaScriptForCreateZero) {
  const std::string command = std::string(RATEWARDEN_SOURCE_DIR) +
                              "/scripts/postgres_schema.sh handmade limits logged | psql -q -v ON_ERROR_STOP=1 "
                              "-h 127.0.0.1 -U postgres -d postgres -p " + std::to_string(server().port()) +
                              " >/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  EXPECT_EQ(server().sql("SELECT relpersistence FROM pg_class WHERE oid = 'handmade.limits'::regclass"), "p");
  Limiter limiter("2/minute", postgres("?schema=handmade&create=0&timeout=5s"));
  EXPECT_EQ(limiter.hit("k").remaining, 1);
  EXPECT_EQ(limiter.hit("k").remaining, 0);
  EXPECT_FALSE(limiter.hit("k").allowed);
}

// Connections open on demand, up to pool=: one for a caller alone, more only for calls at once.
TEST(PostgresStore, OpensConnectionsOnDemandUpToThePool) {
  const std::string t0 = server().sql("SELECT clock_timestamp()");
  const std::string opened = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'ratewarden' AND "
                             "backend_start >= '" + t0 + "'";
  Limiter limiter("1000000/hour", postgres("?pool=6&timeout=5s&prefix=on-demand"));
  for (int i = 0; i < 50; ++i) EXPECT_TRUE(limiter.hit("alone" + std::to_string(i)).allowed);
  EXPECT_EQ(server().sql(opened), "1");
  std::vector<std::thread> threads;
  for (int t = 0; t < 12; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) limiter.hit("together" + std::to_string(t));
    });
  for (auto& t : threads) t.join();
  const int n = std::stoi(server().sql(opened));
  EXPECT_GE(n, 2);  // 12 callers at once
  EXPECT_LE(n, 6);
  EXPECT_EQ(limiter.peek("together0").remaining, 1000000 - 100);
}

// Expired rows go in the background, batch by batch; the live ones stay.
TEST(PostgresStore, SweepDeletesExpiredRows) {
  const std::string q = "?table=swept&sweep=100ms&sweep_blocks=16";
  Limiter brief("1/3s", postgres(q + "&prefix=brief&timeout=5s"));
  Limiter lasting("1/hour", postgres(q + "&prefix=lasting"));
  std::vector<std::string> flood;
  for (int i = 0; i < 3000; ++i) flood.push_back("flood" + std::to_string(i));
  std::vector<std::string_view> views(flood.begin(), flood.end());
  for (const Decision& d : brief.hit_many(views)) EXPECT_TRUE(d.allowed);  // pipelined: well within the 3 s
  for (int i = 0; i < 100; ++i) lasting.hit("user" + std::to_string(i));
  EXPECT_EQ(count_rows(server(), "true", "ratewarden.swept"), 3100);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (count_rows(server(), "true", "ratewarden.swept") > 100 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(Ms(50));
  EXPECT_EQ(count_rows(server(), "true", "ratewarden.swept"), 100);
  EXPECT_EQ(count_rows(server(), "expires_at < (extract(epoch FROM clock_timestamp()) * 1000000)::bigint",
                       "ratewarden.swept"),
            0);
}

// 8 processes start at once on a database with no schema: each checks it, one or more create it under the advisory
// lock, and none fails, though the calls' 1 s timeout need not cover the set-up.
TEST(PostgresSchema, ConcurrentFirstUseFromEightProcesses) {
  const std::string url = server().url("?schema=raced&timeout=1s&connect_timeout=30s");
  std::vector<pid_t> children;
  for (int p = 0; p < 8; ++p) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int code = 0;
      try {
        Limiter limiter("1000/hour", open_store(url));
        for (int i = 0; i < 10; ++i) limiter.hit("k" + std::to_string(i));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child: %s\n", e.what());
        code = 1;
      }
      ::_exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a child failed";
  }
  EXPECT_EQ(count_rows(server(), "true", "raced.limits"), 10);
  EXPECT_EQ(server().sql("SELECT (state[1])::text FROM raced.limits LIMIT 1"), "8");
  EXPECT_EQ(server().sql("SELECT version FROM raced.limits_version"), "4");
}

// The set-up (here waiting for the advisory lock of another process creating the schema) is bounded by
// connect_timeout and not counted in any call's timeout: a cold process's first call waits for it, then decides
// within its own 500 ms, where it used to fail at 500 ms (and every call after it, while others kept the lock).
// (500 ms, not less: after the step the connection prepares its statements and PostgreSQL compiles the functions on
// their first call, which takes over 100 ms on a busy machine.)
TEST(PostgresSchema, TheSetUpIsOutsideTheCallsTimeout) {
  PostgresSession other(server());
  other.sql("SELECT pg_advisory_lock(7418412635419208501)");  // what a process creating the schema holds
  Limiter limiter("10/minute", postgres("?schema=patient&timeout=500ms&connect_timeout=60s"));
  std::optional<Decision> first;
  std::string failed;
  std::thread caller([&] {
    try {
      first = limiter.hit("k");
    } catch (const StoreError& e) {
      failed = e.what();
    }
  });
  // The set-up has waited for the lock 4 times the calls' timeout, and waits on.
  const std::string waiting =
      "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND "
      "NOT l.granted AND a.application_name = 'ratewarden' AND clock_timestamp() - a.query_start > interval '2s'";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (server().sql(waiting) == "0" && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(Ms(10));
  EXPECT_EQ(server().sql(waiting), "1") << "the set-up was cancelled before connect_timeout";
  other.sql("SELECT pg_advisory_unlock(7418412635419208501)");
  caller.join();
  EXPECT_EQ(failed, "");
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->allowed);
  EXPECT_EQ(limiter.hit("k").remaining, 8);  // and the calls after it need nothing more
}

// What a process start costs when the schema is current: one read of the version row. The functions are replaced
// only when the version row is missing (a schema from before version 4) or older.
TEST(PostgresSchema, ASchemaAtThisVersionIsReadNotReplaced) {
  const std::string functions = "SELECT string_agg(proname || ':' || xmin::text, ',' ORDER BY proname) FROM pg_proc "
                                "WHERE pronamespace = 'versioned'::regnamespace";
  auto start = [] { return Limiter("1000/hour", postgres("?schema=versioned&timeout=5s")); };  // a new process
  EXPECT_TRUE(start().hit("k").allowed);
  EXPECT_EQ(server().sql("SELECT version FROM versioned.limits_version"), "4");
  const std::string created = server().sql(functions);
  EXPECT_TRUE(start().hit("k").allowed);
  EXPECT_TRUE(start().hit("k").allowed);
  EXPECT_EQ(server().sql(functions), created) << "a process start with the schema current replaced its functions";
  // Version 3 (no version row): upgraded in place, the state kept.
  server().sql("DROP TABLE versioned.limits_version");
  EXPECT_EQ(start().peek("k").remaining, 997);
  EXPECT_EQ(server().sql("SELECT version FROM versioned.limits_version"), "4");
  const std::string upgraded = server().sql(functions);
  EXPECT_NE(upgraded, created);
  server().sql("UPDATE versioned.limits_version SET version = 3");
  EXPECT_EQ(start().peek("k").remaining, 997);
  EXPECT_EQ(server().sql("SELECT version FROM versioned.limits_version"), "4");
  EXPECT_NE(server().sql(functions), upgraded);
}

// A database a newer library has set up: a StoreError that says so, for stores that create and for create=0, and
// the set-up script (the store's, or a DBA's through scripts/postgres_schema.sh) replaces nothing.
TEST(PostgresSchema, ANewerSchemaIsAClearErrorAndNeverDowngraded) {
  EXPECT_TRUE(Limiter("5/hour", postgres("?schema=future&timeout=5s")).hit("k").allowed);
  server().sql("UPDATE future.limits_version SET version = 99");
  const std::string functions = "SELECT string_agg(proname || ':' || xmin::text, ',' ORDER BY proname) FROM pg_proc "
                                "WHERE pronamespace = 'future'::regnamespace";
  const std::string before = server().sql(functions);
  for (const char* query : {"?schema=future&timeout=5s", "?schema=future&timeout=5s&create=0"}) {
    Limiter limiter("5/hour", postgres(query));
    try {
      limiter.hit("k");
      ADD_FAILURE() << "decided on a newer schema: " << query;
    } catch (const StoreError& e) {
      EXPECT_NE(std::string(e.what()).find("holds schema version 99 of future.limits, newer than this library's 4: "
                                            "upgrade the library"),
                std::string::npos)
          << e.what();
    }
  }
  const std::string command = std::string(RATEWARDEN_SOURCE_DIR) +
                              "/scripts/postgres_schema.sh future | psql -q -v ON_ERROR_STOP=1 -h 127.0.0.1 "
                              "-U postgres -d postgres -p " + std::to_string(server().port()) + " 2>&1";
  FILE* psql = ::popen(command.c_str(), "r");
  ASSERT_NE(psql, nullptr);
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, psql) != nullptr) output += buffer;
  EXPECT_NE(::pclose(psql), 0) << output;
  EXPECT_NE(output.find("newer than this library's 4"), std::string::npos) << output;
  EXPECT_EQ(server().sql(functions), before) << "an older script replaced a newer schema's functions";
  EXPECT_EQ(server().sql("SELECT version FROM future.limits_version"), "99");
}

// Closing a store with thousands of calls in flight: every callback runs exactly once, with an error or a decision.
TEST(PostgresStore, CloseWithThousandsInFlight) {
  auto store = postgres("?timeout=5s&table=closing");
  Limiter limiter("1000000/hour", store);
  limiter.hit("warm");  // connected, schema made
  constexpr int kCalls = 5000;
  std::atomic<int> answered{0}, failed{0};
  const Policy policy = limiter.policies()[0];
  std::vector<std::string> keys(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    keys[i] = limiter.storage_key("k" + std::to_string(i % 50), 0);
    StoreCall call;
    call.policies = &policy;
    call.keys = &keys[i];
    call.count = 1;
    call.tag = keys[i];
    store->decide_async(call, [&](const Decision* d, const Error* e) {
      (d != nullptr ? answered : failed)++;
      EXPECT_TRUE((d == nullptr) != (e == nullptr));
    });
  }
  store->close();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (answered + failed < kCalls && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(Ms(10));
  std::this_thread::sleep_for(Ms(100));  // and no second callback
  EXPECT_EQ(answered + failed, kCalls);
  EXPECT_GT(failed.load(), 0) << "close() came after every answer: the test proved nothing";
  EXPECT_THROW(limiter.hit("after"), StoreError);
}

// fork() after use: the child's calls go through connections of its own; the parent's keep working.
TEST(PostgresStore, ForkAfterUse) {
  Limiter limiter("100/minute", postgres("?timeout=5s&table=forked"));
  limiter.reset("k");
  EXPECT_EQ(limiter.hit("k").remaining, 99);
  const pid_t pid = ::fork();
  if (pid == 0) {
    int code = 1;
    try {
      code = limiter.hit("k").remaining == 98 && limiter.hit("k").remaining == 97 ? 0 : 2;
    } catch (...) {
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_EQ(limiter.hit("k").remaining, 96);
}

// A server of its own: these tests kill it.
TEST(PostgresFailures, KillMidFloodAndRestart) {
  PostgresServer own;
  Limiter limiter("1000000/minute", open_store(own.url("?timeout=300ms&connect_timeout=300ms&pool=2&circuit_backoff=100ms")));
  EXPECT_TRUE(limiter.hit("k").allowed);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> ok{0}, failed{0}, slowest_ms{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      while (!stop) {
        const int64_t ms = elapsed_ms([&] {
          try {
            limiter.hit("k");
            ok++;
          } catch (const StoreError& e) {
            failed++;
          }
        });
        int64_t seen = slowest_ms;
        while (ms > seen && !slowest_ms.compare_exchange_weak(seen, ms)) {
        }
      }
    });
  // Each step waits for what it needs (for 30 s at most): calls decided before the kill, calls failed after it,
  // calls decided again after the restart.
  const auto until = [](const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(Ms(10));
    return done();
  };
  EXPECT_TRUE(until([&] { return ok >= 20; }));
  own.kill();
  const int64_t failed_before = failed;
  EXPECT_TRUE(until([&] { return failed > failed_before; })) << "no call failed while the server was down";
  own.start();
  const int64_t ok_at_restart = ok;
  EXPECT_TRUE(until([&] { return ok > ok_at_restart; })) << "no recovery after the restart";
  stop = true;
  for (auto& c : callers) c.join();
  EXPECT_LT(slowest_ms.load(), 1000) << "a call outlived its timeouts";
}

TEST(PostgresFailures, TerminatedBackendsMidFlood) {
  PostgresServer own;
  Limiter limiter("1000000/minute", open_store(own.url("?timeout=500ms&pool=3&table=killed&circuit_backoff=50ms")));
  EXPECT_TRUE(limiter.hit("k").allowed);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> ok{0}, failed{0}, slowest_ms{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      while (!stop) {
        const int64_t ms = elapsed_ms([&] {
          try {
            limiter.hit("k" + std::to_string(ok % 10));
            ok++;
          } catch (const StoreError&) {
            failed++;
          }
        });
        int64_t seen = slowest_ms;
        while (ms > seen && !slowest_ms.compare_exchange_weak(seen, ms)) {
        }
      }
    });
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(Ms(100));
    own.sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'ratewarden'");
  }
  const int64_t ok_before = ok;
  // Each kill counts against the circuit (one back-off of 50 ms at most), then the callers decide again.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (ok == ok_before && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(Ms(10));
  stop = true;
  for (auto& c : callers) c.join();
  EXPECT_GT(ok.load(), ok_before) << "no recovery after the kills";
  EXPECT_LT(slowest_ms.load(), 1000) << "a call outlived its timeout";
}

// The circuit breaker: after circuit_failures connection failures in a row, calls fail at once until the back-off
// has passed; then the next call tries the server again.
TEST(PostgresFailures, CircuitOpensAndRetriesAfterTheBackOff) {
  PostgresServer own;
  Limiter limiter("100/minute", open_store(own.url("?circuit_failures=2&circuit_backoff=300ms&timeout=1s")));
  EXPECT_TRUE(limiter.hit("k").allowed);
  own.kill();
  for (int i = 0; i < 2; ++i) EXPECT_THROW(limiter.hit("k"), StoreError);  // refused: counted
  try {
    limiter.hit("k");
    ADD_FAILURE() << "a dead server answered";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("not tried"), std::string::npos) << e.what();
  }
  own.start();
  std::this_thread::sleep_for(Ms(350));
  EXPECT_TRUE(limiter.hit("k").allowed);  // the back-off passed: tried, answered, closed
  EXPECT_TRUE(limiter.hit("k").allowed);
}

TEST(PostgresFailures, HungServerTimesOut) {
  PostgresServer own;
  Limiter limiter("100/minute", open_store(own.url("?timeout=200ms&connect_timeout=200ms")));
  // Connected first: on a busy machine a new server's first backend may take longer than the connect timeout (short
  // on purpose) to start, so the first hits may fail; one is answered well within this deadline.
  const auto connected_by = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (bool connected = false; !connected;) {
    try {
      connected = limiter.hit("k").allowed;
    } catch (const StoreError& e) {
      ASSERT_LT(std::chrono::steady_clock::now(), connected_by) << e.what();
      std::this_thread::sleep_for(Ms(50));
    }
  }
  own.stop();
  for (int i = 0; i < 3; ++i) {
    const int64_t ms = elapsed_ms([&] { EXPECT_THROW(limiter.hit("k"), StoreError); });
    EXPECT_LT(ms, 600);
  }
  own.cont();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool recovered = false;
  while (!recovered && std::chrono::steady_clock::now() < deadline) {
    try {
      recovered = limiter.hit("k").allowed;
    } catch (const StoreError&) {
      std::this_thread::sleep_for(Ms(50));
    }
  }
  EXPECT_TRUE(recovered);
}

// Another session holds the row: a hit waits on its lock and fails with a timeout; the server cancels the hit's
// statement too (statement_timeout), so that it counts nothing once the lock is let go, and the next hit decides.
// Every step waits for its condition: the lock is held when the holder's SELECT ... FOR UPDATE returns, and it is
// let go only once the server has ended the hit's statement.
TEST(PostgresFailures, RowLockHeldPastTheTimeoutIsATimeout) {
  Limiter limiter("100/minute", postgres("?timeout=300ms&table=locked&prefix=lock"));
  EXPECT_EQ(limiter.hit("k").remaining, 99);
  PostgresSession holder(server());
  // Were the hit to wait for the lock (a broken timeout), the holder lets go by itself after 20 s, and the test fails
  // instead of hanging.
  holder.sql("SET idle_in_transaction_session_timeout = '20s'");
  holder.sql("BEGIN");
  holder.sql("SELECT 1 FROM ratewarden.locked FOR UPDATE");
  const std::string t0 = server().sql("SELECT clock_timestamp()");
  const int64_t ms = elapsed_ms([&] {
    try {
      limiter.hit("k");
      ADD_FAILURE() << "decided through a held lock";
    } catch (const StoreError& e) {
      EXPECT_EQ(e.code(), ErrorCode::store_timeout) << e.what();
    }
  });
  EXPECT_GE(ms, 300) << "it did not wait for its timeout";
  EXPECT_LT(ms, 10000) << "it waited for the lock";
  // The hit's statement started on the server after t0 (its backend shows it as its query) and is no longer running.
  const std::string hit_ended =
      "SELECT count(*) > 0 AND count(*) FILTER (WHERE state = 'active') = 0 FROM pg_stat_activity WHERE "
      "application_name = 'ratewarden' AND query LIKE '%ratewarden.locked_decide%' AND query_start >= '" + t0 + "'";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (server().sql(hit_ended) != "t" && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(Ms(10));
  ASSERT_EQ(server().sql(hit_ended), "t") << "the hit's statement is still running on the server, or never ran";
  holder.sql("COMMIT");
  EXPECT_EQ(limiter.hit("k").remaining, 98);
}

// Hosts are read as Redis URLs read them (url.cpp, split_host_port); no host is the default one.
TEST(PostgresUrl, HostsAndPorts) {
  const std::pair<const char*, const char*> cases[] = {
      {"postgres://h/db", "postgres://h:5432/db"},
      {"postgres://h:6000/db", "postgres://h:6000/db"},
      {"postgres://[::1]/db", "postgres://[::1]:5432/db"},
      {"postgres://[::1]:6000/db", "postgres://[::1]:6000/db"},
      {"postgres:///db", "postgres://127.0.0.1:5432/db"},
      {"postgres://:6000/db", "postgres://127.0.0.1:6000/db"},
  };
  for (const auto& [url, described] : cases) {
    const std::string d = open_store(url)->describe();
    EXPECT_EQ(d.substr(0, d.find('?')), described) << url;
  }
  for (const char* bad : {"postgres://h:/db", "postgres://h:0/db", "postgres://h:99999/db", "postgres://h:x/db",
                          "postgres://[::1/db", "postgres://[::1]x/db", "postgres://a,b/db"})
    EXPECT_THROW(open_store(bad), InvalidArgument) << bad;
}

}  // namespace
}  // namespace ratewarden::testing
