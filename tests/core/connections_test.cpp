// The Redis store's connections: TLS, Unix sockets, the circuit breaker, thousands of calls in flight, a store
// closed with calls in flight — against real redis-server processes started by the shared launcher.
#include <dirent.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "conformance.hpp"
#include "redis_server.hpp"
#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

using Ms = std::chrono::milliseconds;

RedisServer& tls_server() {
  static RedisServer s({}, ServerOptions{true, false, true});  // TLS and a Unix socket besides the plain port
  return s;
}

// The library's I/O thread ("ratewarden-io") asleep in epoll_wait, as /proc/self/task tells (the kernel's wait
// channel when it shows one, else the thread's state): waited for, for at most 30 s.
bool io_thread_asleep() {
  const auto read = [](const std::string& path) {
    std::string text;
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      char buf[512];
      const size_t n = std::fread(buf, 1, sizeof buf, f);
      text.assign(buf, n);
      std::fclose(f);
    }
    return text;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    DIR* d = opendir("/proc/self/task");
    bool asleep = false;
    while (dirent* e = readdir(d)) {
      const std::string task = std::string("/proc/self/task/") + e->d_name;
      if (e->d_name[0] == '.' || read(task + "/comm") != "ratewarden-io\n") continue;
      const std::string stat = read(task + "/stat");
      const size_t close = stat.rfind(')');
      const std::string wchan = read(task + "/wchan");
      asleep = close != std::string::npos && stat.compare(close + 2, 1, "S") == 0 &&
               (wchan == "0" || wchan.empty() || wchan.find("epoll") != std::string::npos);
    }
    closedir(d);
    if (asleep) return true;
    std::this_thread::sleep_for(Ms(1));
  }
  return false;
}

template <class F>
int64_t elapsed_us(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
}

// Waits for n callbacks.
class Countdown {
 public:
  explicit Countdown(int n) : left_(n) {}
  void done() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--left_ == 0) cv_.notify_all();
  }
  bool wait_for(std::chrono::seconds s) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, s, [this] { return left_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int left_;
};

class TlsConformance : public ::testing::TestWithParam<size_t> {};

TEST_P(TlsConformance, MatchesTheVectors) {
  ManualClock clock;
  // A timeout that a loaded machine meets: these test what is decided, not when.
  run_conformance_case(GetParam(), open_store(tls_server().tls_url() + "&timeout=10s", clock.clock()),
                       [&](int64_t now) { clock.set(now); });
}

INSTANTIATE_TEST_SUITE_P(Vectors, TlsConformance, ::testing::ValuesIn(conformance_cases()), conformance_case_name);

class UnixConformance : public ::testing::TestWithParam<size_t> {};

TEST_P(UnixConformance, MatchesTheVectors) {
  ManualClock clock;
  // Database 1: the TLS cases wrote the same keys in database 0 of the same server.
  run_conformance_case(GetParam(), open_store(tls_server().unix_url() + "?db=1&timeout=10s", clock.clock()),
                       [&](int64_t now) { clock.set(now); });
}

INSTANTIATE_TEST_SUITE_P(Vectors, UnixConformance, ::testing::ValuesIn(conformance_cases()), conformance_case_name);

TEST(Tls, AClientCertificateAndSniWork) {
  const TlsFiles& f = tls_server().tls();
  Limiter limiter("5/minute", open_store(tls_server().tls_url() + "&tls_cert=" + f.cert + "&tls_key=" + f.key +
                                         "&tls_sni=localhost&prefix=tls-cert"));
  EXPECT_TRUE(limiter.hit("k").allowed);
  EXPECT_EQ(limiter.peek("k").used, 1);
}

TEST(Tls, AnUntrustedCertificateIsAClearStoreError) {
  const std::string url = "rediss://127.0.0.1:" + std::to_string(tls_server().tls_port()) +
                          "?tls_ca=" + tls_server().tls().wrong_ca;
  Limiter limiter("5/minute", open_store(url));
  try {
    limiter.hit("k");
    FAIL() << "a server with an untrusted certificate answered";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), ErrorCode::store_unavailable);
    EXPECT_NE(std::string(e.what()).find("certificate verify failed"), std::string::npos) << e.what();
  }
  // The wrong name is refused too.
  Limiter misnamed("5/minute", open_store(tls_server().tls_url() + "&tls_sni=not-the-server.example"));
  EXPECT_THROW(misnamed.hit("k"), StoreError);
}

TEST(Tls, BadFilesAndOptionsAreInvalidArguments) {
  EXPECT_THROW(open_store("rediss://127.0.0.1:1?tls_ca=/no/such/ca.pem"), InvalidArgument);
  EXPECT_THROW(open_store("rediss://127.0.0.1:1?tls_cert=" + tls_server().tls().cert), InvalidArgument);  // no key
  EXPECT_THROW(open_store("redis://127.0.0.1:1?tls_ca=x"), InvalidArgument);  // TLS options need rediss://
  EXPECT_THROW(open_store("redis+unix://host/path"), InvalidArgument);
  EXPECT_THROW(open_store("redis+unix:///tmp/r.sock?db=x"), InvalidArgument);
  EXPECT_EQ(open_store("redis+unix://:pw@/tmp/r.sock?db=2")->describe(),
            "redis+unix://:***@/tmp/r.sock?timeout=250ms&connect_timeout=1000ms&pool=4&db=2");
}

TEST(Unix, AMissingSocketIsUnavailable) {
  Limiter limiter("5/minute", open_store("redis+unix:///nonexistent/ratewarden.sock"));
  try {
    limiter.hit("k");
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), ErrorCode::store_unavailable);
    EXPECT_NE(std::string(e.what()).find("cannot connect"), std::string::npos) << e.what();
  }
}

// A hung server (SIGSTOP): calls time out, the circuit opens and calls fail at once; after SIGCONT the store serves
// again within one back-off period.
TEST(Circuit, OpensOnAHungServerAndClosesAfterIt) {
  RedisServer own;
  Limiter limiter("1000/minute", open_store(own.url() + "?timeout=100ms&circuit_failures=3&circuit_backoff=500ms"));
  ASSERT_TRUE(limiter.hit("k").allowed);
  own.stop();
  for (int i = 0; i < 3; ++i) {
    const int64_t us = elapsed_us([&] { EXPECT_THROW(limiter.hit("k"), StoreError); });
    EXPECT_GE(us, 90000) << "call " << i << " should have waited for its timeout";
    EXPECT_LT(us, 400000) << "call " << i;
  }
  // Open: failing at once, with a message that says why. The median, not every call: a busy machine may preempt
  // any one of them.
  std::vector<int64_t> times;
  for (int i = 0; i < 101; ++i) {
    times.push_back(elapsed_us([&] {
      try {
        limiter.hit("k");
        ADD_FAILURE() << "a stopped server answered";
      } catch (const StoreError& e) {
        EXPECT_EQ(e.code(), ErrorCode::store_unavailable);
        EXPECT_NE(std::string(e.what()).find("not tried"), std::string::npos) << e.what();
      }
    }));
  }
  std::sort(times.begin(), times.end());
  EXPECT_LT(times[50], 1000) << "the median call took " << times[50] << " us while the circuit is open";
  own.cont();
  const auto resumed = std::chrono::steady_clock::now();
  bool served = false;
  while (!served && std::chrono::steady_clock::now() - resumed < Ms(2000)) {
    try {
      served = limiter.hit("k").allowed;
    } catch (const StoreError&) {
      std::this_thread::sleep_for(Ms(10));
    }
  }
  EXPECT_TRUE(served);
  EXPECT_LT(std::chrono::steady_clock::now() - resumed, Ms(500 + 300));  // one back-off period, and a probe
}

TEST(Circuit, ZeroTurnsItOff) {
  RedisServer own;
  Limiter limiter("10/minute", open_store(own.url() + "?timeout=50ms&circuit_failures=0"));
  own.stop();
  for (int i = 0; i < 5; ++i) EXPECT_GE(elapsed_us([&] { EXPECT_THROW(limiter.hit("k"), StoreError); }), 45000);
  own.cont();
  EXPECT_TRUE(limiter.hit("k").allowed);
}

TEST(Timeouts, EveryCallEndsWithinTheTimeoutWhateverIsInFlight) {
  RedisServer own;
  Limiter limiter("100000/minute", open_store(own.url() + "?timeout=150ms&circuit_failures=0"));
  ASSERT_TRUE(limiter.hit("k").allowed);
  own.stop();
  Countdown all(1000);
  std::atomic<int> timeouts{0};
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i)
    limiter.hit_async("k" + std::to_string(i), 1,
                      [&](const Decision*, const Error* e) {
                        if (e != nullptr && e->code() == ErrorCode::store_timeout) ++timeouts;
                        all.done();
                      },
                      Completion::any_thread);
  ASSERT_TRUE(all.wait_for(std::chrono::seconds(5)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, Ms(400));
  EXPECT_EQ(timeouts.load(), 1000);
  own.cont();
}

TEST(Flood, AHundredThousandCallsInFlightHoldNoThread) {
  Limiter limiter("1000000/minute", open_store(tls_server().url() + "?timeout=30s&prefix=flood"));
  limiter.hit("warm-up");  // the library's threads start with the first network call
  const int threads = proc_entries("/proc/self/task");
  constexpr int kCalls = 100000;
  Countdown all(kCalls);
  std::atomic<int> allowed{0};
  for (int i = 0; i < kCalls; ++i)
    limiter.hit_async("k" + std::to_string(i % 5000), 1,
                      [&](const Decision* d, const Error*) {
                        if (d != nullptr && d->allowed) ++allowed;
                        all.done();
                      },
                      Completion::any_thread);
  EXPECT_EQ(proc_entries("/proc/self/task"), threads);
  ASSERT_TRUE(all.wait_for(std::chrono::seconds(60)));
  EXPECT_EQ(allowed.load(), kCalls);
  EXPECT_EQ(proc_entries("/proc/self/task"), threads);
}

TEST(Threads, ASynchronousCallOnTheIoThreadIsRefusedNotADeadlock) {
  auto limiter = std::make_shared<Limiter>("100/minute", open_store(tls_server().url() + "?prefix=io-thread"));
  std::promise<std::string> seen;
  limiter->hit_async("k", 1,
                     [&](const Decision*, const Error*) {
                       try {
                         limiter->hit("k");
                         seen.set_value("no error");
                       } catch (const InvalidArgument& e) {
                         seen.set_value(e.what());
                       }
                     },
                     Completion::any_thread);
  auto f = seen.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_NE(f.get().find("would wait for itself"), std::string::npos);
}

// A synchronous call runs the loop on the caller's thread while the I/O thread sleeps; the calls after it must still
// wake the I/O thread.
TEST(Threads, AsynchronousCallsAfterASynchronousOneAreServed) {
  Limiter limiter("1000000/minute", open_store(tls_server().url() + "?prefix=after-sync"));
  for (int i = 0; i < 200; ++i) {
    limiter.hit("sync");
    std::promise<bool> answered;
    limiter.hit_async("async", 1, [&](const Decision* d, const Error*) { answered.set_value(d != nullptr); },
                      Completion::any_thread);
    auto f = answered.get_future();
    ASSERT_EQ(f.wait_for(std::chrono::seconds(2)), std::future_status::ready) << "round " << i;
    EXPECT_TRUE(f.get());
    if (i % 50 == 0) std::this_thread::sleep_for(Ms(20));  // let the I/O thread fall asleep again
  }
}

// hold_io_wakeups (limiter.hpp): calls started while held all leave at the release, and are answered exactly; a
// held call is never stranded when another thread wakes the I/O thread first (no release needed for it).
// A stranded call is never answered: the store's timeout is long, so that on a busy machine every call is answered
// with a decision however late, and the waits below end when the answers come.
TEST(Threads, HeldWakeupsLoseNoCall) {
  Limiter limiter("1000000/minute", open_store(tls_server().url() + "?prefix=held&timeout=120s"));
  for (int round = 0; round < 20; ++round) {
    limiter.reset("k" + std::to_string(round));
    Countdown all(100);
    std::atomic<int> allowed{0};
    hold_io_wakeups();
    for (int i = 0; i < 100; ++i)
      limiter.hit_async("k" + std::to_string(round), 1, [&](const Decision* d, const Error*) {
        if (d != nullptr && d->allowed) ++allowed;
        all.done();
      }, Completion::any_thread);
    release_io_wakeups();
    ASSERT_TRUE(all.wait_for(std::chrono::seconds(60))) << "round " << round;
    EXPECT_EQ(allowed.load(), 100);
    EXPECT_EQ(limiter.peek("k" + std::to_string(round)).remaining, 1000000 - 100);  // each hit counted once
  }
  ASSERT_TRUE(io_thread_asleep());  // else the call below would not be held
  std::promise<std::string> held;
  hold_io_wakeups();
  limiter.hit_async("stranded?", 1,
                    [&](const Decision* d, const Error* e) { held.set_value(d != nullptr ? "" : e->what()); },
                    Completion::any_thread);
  std::thread([&] {  // another thread's call wakes the I/O thread, which takes the held call too
    std::promise<void> other;
    limiter.hit_async("other", 1, [&](const Decision*, const Error*) { other.set_value(); }, Completion::any_thread);
    other.get_future().wait();
  }).join();
  auto f = held.get_future();
  const bool answered = f.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  release_io_wakeups();
  ASSERT_TRUE(answered);
  EXPECT_EQ(f.get(), "") << "answered with an error, not a decision";
}

TEST(Threads, LibraryThreadCallbacksMayMakeSynchronousCalls) {
  auto limiter = std::make_shared<Limiter>("1000/minute", open_store(tls_server().url() + "?prefix=callback-sync"));
  Countdown all(50);
  std::atomic<int> ok{0};
  for (int i = 0; i < 50; ++i)
    limiter->hit_async("k", 1, [&](const Decision*, const Error*) {
      ok += static_cast<int>(limiter->hit_many({"a", "b"}).size());
      all.done();
    });
  ASSERT_TRUE(all.wait_for(std::chrono::seconds(10)));
  EXPECT_EQ(ok.load(), 100);
}

TEST(Lifetime, CheckAndClose) {
  RedisServer own;
  auto store = open_store(own.url() + "?timeout=100ms&circuit_failures=0");
  EXPECT_NO_THROW(store->check());
  EXPECT_NO_THROW(open_store("memory://")->check());
  own.stop();
  EXPECT_THROW(store->check(), StoreError);
  own.cont();
  EXPECT_NO_THROW(store->check());
  Limiter limiter("10/minute", store);
  own.stop();
  Countdown in_flight(1);
  std::string failure;
  limiter.hit_async("k", 1, [&](const Decision*, const Error* e) {
    failure = e != nullptr ? e->what() : "";
    in_flight.done();
  }, Completion::any_thread);
  store->close();
  ASSERT_TRUE(in_flight.wait_for(std::chrono::seconds(5)));
  EXPECT_NE(failure.find("closed"), std::string::npos) << failure;
  own.cont();
  const int64_t us = elapsed_us([&] {
    try {
      limiter.hit("k");
      ADD_FAILURE() << "a closed store answered";
    } catch (const StoreError& e) {
      EXPECT_NE(std::string(e.what()).find("the store was closed"), std::string::npos) << e.what();
    }
  });
  EXPECT_LT(us, 50000);
  store->close();  // again: nothing happens
}

// The last reference to a store goes while its calls are in flight: each still completes exactly once.
TEST(Lifetime, AStoreDroppedWithCallsInFlightCompletesThemAll) {
  RedisServer own;
  Countdown all(2000);
  std::atomic<int> answers{0};
  {
    Limiter limiter("1000000/minute", open_store(own.url()));
    for (int i = 0; i < 2000; ++i)
      limiter.hit_async("k", 1,
                        [&](const Decision* d, const Error* e) {
                          answers += (d != nullptr) + (e != nullptr);
                          all.done();
                        },
                        Completion::any_thread);
  }
  ASSERT_TRUE(all.wait_for(std::chrono::seconds(10)));
  EXPECT_EQ(answers.load(), 2000);
}

}  // namespace
}  // namespace ratewarden::testing
