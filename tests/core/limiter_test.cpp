// The Limiter: validation, multi-policy, batch, reset, key format and store failures.
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

constexpr int64_t kS = 1000000;

TEST(Limiter, LoginScenario) {
  ManualClock clock;
  Limiter limiter("5/minute", memory_store(clock));
  for (int i = 0; i < 5; ++i) {
    Decision d = limiter.hit("login:alice");
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.remaining, 4 - i);
  }
  clock.advance(20 * kS);
  Decision sixth = limiter.hit("login:alice");
  EXPECT_FALSE(sixth.allowed);
  EXPECT_EQ(sixth.retry_after_us, 40 * kS);
  EXPECT_TRUE(limiter.hit("login:bob").allowed);
  clock.advance(40 * kS);
  EXPECT_TRUE(limiter.hit("login:alice").allowed);
}

TEST(Limiter, RejectsBadKeysAndCosts) {
  ManualClock clock;
  Limiter limiter("5/minute; 3/second", memory_store(clock));
  EXPECT_THROW(limiter.hit(""), InvalidArgument);
  EXPECT_THROW(limiter.hit(std::string(4097, 'k')), InvalidArgument);
  EXPECT_NO_THROW(limiter.hit(std::string(4096, 'k')));
  EXPECT_THROW(limiter.hit("k", 0), InvalidArgument);
  EXPECT_THROW(limiter.hit("k", -1), InvalidArgument);
  EXPECT_THROW(limiter.hit("k", 4), InvalidArgument);  // over the smallest capacity (3)
  EXPECT_THROW(limiter.peek("k", 0), InvalidArgument);
  EXPECT_THROW(limiter.reset(""), InvalidArgument);
  EXPECT_THROW(limiter.hit_many({"a", ""}), InvalidArgument);
  try {
    limiter.hit("k", 9);
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("between 1 and 3"), std::string::npos) << e.what();
  }
}

TEST(Limiter, RejectsBadOptions) {
  auto store = std::make_shared<MemoryStore>();
  LimiterOptions braces;
  braces.prefix = "a{b";
  EXPECT_THROW(Limiter("1/s", store, braces), InvalidArgument);
  LimiterOptions empty;
  empty.prefix = "";
  EXPECT_THROW(Limiter("1/s", store, empty), InvalidArgument);
  EXPECT_THROW(Limiter("1/s", nullptr), InvalidArgument);
  EXPECT_THROW(Limiter("many", store), InvalidArgument);
  EXPECT_THROW(Limiter("3/10s; 3/10000ms", store), InvalidArgument);  // one rate, twice
  EXPECT_NO_THROW(Limiter("3/10s; 4/10s", store));
  EXPECT_THROW(parse_on_store_error("ignore"), InvalidArgument);
  EXPECT_EQ(parse_on_store_error("deny"), OnStoreError::deny);
}

TEST(Limiter, KeysAreBinarySafe) {
  ManualClock clock;
  Limiter limiter("1/minute", memory_store(clock));
  const std::string a("user\0a", 6), b("user\0b", 6);
  EXPECT_TRUE(limiter.hit(a).allowed);
  EXPECT_TRUE(limiter.hit(b).allowed);
  EXPECT_FALSE(limiter.hit(a).allowed);
  EXPECT_EQ(limiter.storage_key(a, 0), std::string("rw:{user\0a}:v3:fixed_window:1:60000", 35));
}

TEST(Limiter, StorageKeyFormat) {
  auto store = std::make_shared<MemoryStore>();
  LimiterOptions o;
  o.prefix = "app";
  o.algorithm = Algorithm::gcra;
  EXPECT_EQ(Limiter("10/s; 100/m", store, o).storage_key("u1", 1), "app:{u1}:v3:gcra:100:60000");
  o.burst = 10;  // equal to the limit: the same state as the default
  EXPECT_EQ(Limiter("10/s", store, o).storage_key("u1", 0), "app:{u1}:v3:gcra:10:1000");
  o.burst = 25;
  EXPECT_EQ(Limiter("10/s", store, o).storage_key("u1", 0), "app:{u1}:v3:gcra:10:1000:25");
  LimiterOptions w = with_algorithm(Algorithm::sliding_window);
  EXPECT_EQ(Limiter("10/500ms", store, w).storage_key("u", 0), "rw:{u}:v3:sliding_window:10:500");
  w.buckets = 4;
  EXPECT_EQ(Limiter("10/500ms", store, w).storage_key("u", 0), "rw:{u}:v3:sliding_window:10:500:4");
}

TEST(Limiter, LimitersWithTheSamePolicyShareState) {
  ManualClock clock;
  auto store = memory_store(clock);
  Limiter a("3/minute", store), b("3/minute; 100/hour", store);
  EXPECT_TRUE(a.hit("k", 2).allowed);
  Decision d = b.peek("k");
  EXPECT_EQ(d.remaining, 1);
  LimiterOptions other;
  other.prefix = "other";
  EXPECT_EQ(Limiter("3/minute", store, other).peek("k").remaining, 3);
}

TEST(Limiter, MultiPolicyChargesAllOrNothing) {
  ManualClock clock;
  Limiter limiter("2/second; 3/minute", memory_store(clock), with_algorithm(Algorithm::sliding_log));
  EXPECT_TRUE(limiter.hit("k").allowed);
  EXPECT_TRUE(limiter.hit("k").allowed);
  Decision per_second = limiter.hit("k");
  EXPECT_FALSE(per_second.allowed);
  EXPECT_EQ(per_second.limit, 2);
  EXPECT_EQ(per_second.retry_after_us, kS);
  clock.advance(kS);
  Decision third = limiter.hit("k");
  EXPECT_TRUE(third.allowed);
  EXPECT_EQ(third.limit, 3);  // the per-minute policy now has the lowest remaining
  EXPECT_EQ(third.remaining, 0);
  clock.advance(kS);
  Decision per_minute = limiter.hit("k");
  EXPECT_FALSE(per_minute.allowed);
  EXPECT_EQ(per_minute.retry_after_us, 58 * kS);
  // Denied calls charged nothing: the per-second policy is untouched.
  EXPECT_EQ(Limiter("2/second", limiter.store(), with_algorithm(Algorithm::sliding_log)).peek("k").remaining, 2);
}

// Issue 12: with equal limits only policy_index says which policy a decision reports (Redis: redis_store_test.cpp).
TEST(Limiter, DecisionNamesThePolicyItReports) {
  ManualClock clock;
  Limiter limiter("10/second; 10 per 2 seconds", memory_store(clock));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(limiter.hit("k").policy_index, 0);  // equal remaining: the first policy
  clock.advance(1500000);
  const Decision d = limiter.hit("k");
  EXPECT_EQ(d.policy_index, 1);
  EXPECT_EQ(d.remaining, 4);
}

TEST(Limiter, HitManyDecidesEachKey) {
  ManualClock clock;
  Limiter limiter("1/minute", memory_store(clock));
  std::vector<Decision> d = limiter.hit_many({"a", "b", "a"});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_TRUE(d[0].allowed);
  EXPECT_TRUE(d[1].allowed);
  EXPECT_FALSE(d[2].allowed);
  EXPECT_TRUE(limiter.hit_many({}).empty());
}

TEST(Limiter, ResetForgetsEveryPolicy) {
  ManualClock clock;
  Limiter limiter("1/minute; 5/hour", memory_store(clock));
  EXPECT_TRUE(limiter.hit("k").allowed);
  EXPECT_FALSE(limiter.hit("k").allowed);
  limiter.reset("k");
  Decision d = limiter.hit("k");
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(limiter.peek("k").used, 1);
}

// Fault injection: a store that always fails, as a broken network store would.
class FailingStore : public InProcessStore {
 public:
  Decision decide(const StoreCall&) override { throw StoreError(ErrorCode::store_timeout, "timed out"); }
  void reset(const std::string*, size_t, std::string_view) override {
    throw StoreError(ErrorCode::store_unavailable, "down");
  }
  std::string describe() const override { return "failing://"; }
};

// Fault injection: fails the calls whose key starts with "bad", answers the others from a memory store.
class PartlyFailingStore : public InProcessStore {
 public:
  Decision decide(const StoreCall& call) override {
    if (call.tag.substr(0, 3) == "bad") throw StoreError(ErrorCode::store_error, "OOM");
    return memory_.decide(call);
  }
  void reset(const std::string* keys, size_t n, std::string_view tag) override { memory_.reset(keys, n, tag); }
  std::string describe() const override { return "partly-failing://"; }

 private:
  MemoryStore memory_;
};

TEST(Limiter, HitManyAppliesOnStoreErrorPerKey) {
  auto store = std::make_shared<PartlyFailingStore>();
  LimiterOptions open;
  open.on_store_error = OnStoreError::allow;
  Limiter limiter("1/minute", store, open);
  EXPECT_TRUE(limiter.hit("good").allowed);
  std::vector<Decision> d = limiter.hit_many({"good", "bad1", "other"});
  EXPECT_FALSE(d[0].allowed);  // the store's answer, not the fail-open one
  EXPECT_TRUE(d[1].allowed);   // failed: fail open
  EXPECT_TRUE(d[2].allowed);
  EXPECT_THROW(Limiter("1/minute", store).hit_many({"fine", "bad2"}), StoreError);
}

TEST(Limiter, OnStoreError) {
  auto store = std::make_shared<FailingStore>();
  LimiterOptions o;
  Limiter raise("5/minute", store, o);
  try {
    raise.hit("k");
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), ErrorCode::store_timeout);
  }
  EXPECT_THROW(raise.hit_many({"a"}), StoreError);
  EXPECT_THROW(raise.reset("k"), StoreError);

  o.on_store_error = OnStoreError::allow;
  Decision open = Limiter("5/minute", store, o).hit("k");
  EXPECT_TRUE(open.allowed);
  EXPECT_EQ(open.limit, 5);

  o.on_store_error = OnStoreError::deny;
  Limiter closed("5/minute", store, o);
  Decision shut = closed.hit("k");
  EXPECT_FALSE(shut.allowed);
  EXPECT_EQ(shut.remaining, 0);
  EXPECT_EQ(shut.retry_after_us, kS);
  std::vector<Decision> many = closed.hit_many({"a", "b"});
  EXPECT_FALSE(many[0].allowed);
  EXPECT_FALSE(many[1].allowed);
  // Bad input is an error whatever on_store_error says.
  EXPECT_THROW(closed.hit(""), InvalidArgument);
}

TEST(HitAsync, CallsBackOnceEachOnAnotherThread) {
  auto limiter = std::make_shared<Limiter>("5/minute", std::make_shared<MemoryStore>());
  std::mutex mu;
  std::condition_variable cv;
  int done = 0, allowed = 0;
  bool on_caller_thread = false;
  const auto caller = std::this_thread::get_id();
  for (int i = 0; i < 20; ++i) {
    limiter->hit_async("k", 1, [&](const Decision* d, const Error* e) {
      std::lock_guard<std::mutex> lock(mu);
      EXPECT_TRUE(d != nullptr && e == nullptr);
      on_caller_thread = on_caller_thread || std::this_thread::get_id() == caller;
      allowed += d->allowed ? 1 : 0;
      ++done;
      cv.notify_all();
    });
  }
  std::weak_ptr<Limiter> alive = limiter;
  limiter.reset();  // the pending calls keep it alive
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return done == 20; }));
  EXPECT_EQ(allowed, 5);
  EXPECT_FALSE(on_caller_thread);
  lock.unlock();
  for (int i = 0; i < 100 && !alive.expired(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(alive.expired());
}

TEST(HitAsync, ReportsStoreErrorsAndRejectsBadInputAtOnce) {
  auto limiter = std::make_shared<Limiter>("5/minute", std::make_shared<FailingStore>());
  std::promise<ErrorCode> code;
  limiter->hit_async("k", 1, [&](const Decision* d, const Error* e) {
    EXPECT_EQ(d, nullptr);
    code.set_value(e->code());
  });
  EXPECT_EQ(code.get_future().get(), ErrorCode::store_timeout);
  bool called = false;
  EXPECT_THROW(limiter->hit_async("", 1, [&](const Decision*, const Error*) { called = true; }), InvalidArgument);
  EXPECT_THROW(limiter->hit_async("k", 0, [&](const Decision*, const Error*) { called = true; }), InvalidArgument);
  EXPECT_THROW(limiter->peek_async("k", 6, [&](const Decision*, const Error*) { called = true; }), InvalidArgument);
  EXPECT_THROW(limiter->reset_async("", [&](const Error*) { called = true; }), InvalidArgument);
  EXPECT_THROW(limiter->hit_many_async({"a", ""}, 1, [&](const std::vector<Decision>*, const Error*) { called = true; }),
               InvalidArgument);
  EXPECT_FALSE(called);
}

TEST(HitAsync, AnyThreadAnswersAtOnceOnTheMemoryStore) {
  Limiter limiter("2/minute", std::make_shared<MemoryStore>());
  int answers = 0;
  for (int i = 0; i < 3; ++i)
    limiter.hit_async("k", 1, [&](const Decision* d, const Error*) { answers += d->allowed ? 1 : 10; },
                      Completion::any_thread);
  EXPECT_EQ(answers, 12);  // all three answered before hit_async returned: 2 allowed, 1 denied
  limiter.peek_async("k", 1, [&](const Decision* d, const Error*) { EXPECT_EQ(d->used, 2); }, Completion::any_thread);
  limiter.reset_async("k", [&](const Error* e) { EXPECT_EQ(e, nullptr); }, Completion::any_thread);
  limiter.hit_many_async(
      {"k", "k", "k"}, 1,
      [&](const std::vector<Decision>* d, const Error* e) {
        ASSERT_EQ(e, nullptr);
        ASSERT_EQ(d->size(), 3u);
        EXPECT_TRUE((*d)[1].allowed);
        EXPECT_FALSE((*d)[2].allowed);
      },
      Completion::any_thread);
}

TEST(HitAsync, ALibraryThreadCallbackMayCallBackIntoTheLibrary) {
  auto limiter = std::make_shared<Limiter>("100/minute", std::make_shared<MemoryStore>());
  std::promise<int64_t> used;
  limiter->hit_async("k", 1, [&](const Decision*, const Error*) {
    // Synchronous calls and a nested asynchronous one, from the callback thread.
    limiter->hit_many({"k", "k"});
    limiter->hit_async("k", 1, [&](const Decision* d, const Error*) { used.set_value(d->used); });
  });
  auto f = used.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(f.get(), 4);
}

TEST(HitAsync, OnStoreErrorAppliesToAsynchronousCalls) {
  LimiterOptions o;
  o.on_store_error = OnStoreError::deny;
  Limiter closed("5/minute", std::make_shared<FailingStore>(), o);
  bool denied = false;
  closed.hit_async("k", 1, [&](const Decision* d, const Error* e) { denied = e == nullptr && !d->allowed; },
                   Completion::any_thread);
  EXPECT_TRUE(denied);
  ErrorCode code{};
  closed.reset_async("k", [&](const Error* e) { code = e->code(); }, Completion::any_thread);
  EXPECT_EQ(code, ErrorCode::store_unavailable);  // reset has no decision to fall back on
}

TEST(OpenStore, ParsesMemoryUrls) {
  EXPECT_EQ(open_store("memory://")->describe(), "memory://?max_keys=1000000&shards=256");
  EXPECT_EQ(open_store("memory://?max_keys=1000&shards=8")->describe(), "memory://?max_keys=1000&shards=8");
  EXPECT_EQ(open_store("memory://?max_keys=200")->describe(), "memory://?max_keys=200&shards=2");
  for (const char* bad : {"", "memory", "memory://host", "memory://?max_keys=0", "memory://?max_keys=x",
                          "memory://?size=5", "memory://?max_keys=5&max_keys=6", "mysql://db", "memory://?a"}) {
    EXPECT_THROW(open_store(bad), InvalidArgument) << bad;
  }
}

TEST(OpenStore, MasksPasswordsEvenWhenTheUrlIsMalformed) {
  for (const char* url : {"redis://:s3cr/etPW@host:6379x", "redis://:s3cr?etPW@host:6379x",
                          "redis://user:p@ssw0rd@host:6379?bogus=1", "redis://user:pw@host:1/2/3"}) {
    try {
      open_store(url);
      ADD_FAILURE() << "accepted " << url;
    } catch (const InvalidArgument& e) {
      for (const char* secret : {"s3cr", "etPW", "ssw0rd", ":pw@"})
        EXPECT_EQ(std::string(e.what()).find(secret), std::string::npos) << e.what();
    }
  }
}

TEST(OpenStore, MasksPasswordsInErrors) {
  try {
    open_store("nosuch://user:s3cret@host:1");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("user:***@host"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ratewarden::testing
