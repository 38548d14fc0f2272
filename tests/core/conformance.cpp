#include "conformance.hpp"

#include <cctype>
#include <fstream>
#include <map>

namespace ratewarden::testing {

using nlohmann::json;

const json& conformance_vectors() {
  static const json doc = [] {
    std::ifstream in(RATEWARDEN_VECTORS);
    if (!in) throw std::runtime_error("cannot open " RATEWARDEN_VECTORS);
    return json::parse(in);
  }();
  return doc;
}

std::vector<size_t> conformance_cases() {
  std::vector<size_t> out;
  for (size_t i = 0; i < conformance_vectors().at("cases").size(); ++i) out.push_back(i);
  return out;
}

std::string conformance_case_name(const ::testing::TestParamInfo<size_t>& info) {
  std::string name = conformance_vectors().at("cases").at(info.param).at("name").get<std::string>();
  std::string out = std::to_string(info.param) + "_";
  for (char ch : name) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return out;
}

void run_conformance_case(size_t index, const std::shared_ptr<Store>& store,
                          const std::function<void(int64_t)>& set_time) {
  const json& c = conformance_vectors().at("cases").at(index);
  SCOPED_TRACE(c.at("name").get<std::string>());
  const int64_t base = conformance_vectors().at("base_us").get<int64_t>();
  LimiterOptions options;
  options.algorithm = parse_algorithm(c.at("algorithm").get<std::string>());
  if (!c.at("burst").is_null()) options.burst = c.at("burst").get<int64_t>();
  if (!c.at("buckets").is_null()) options.buckets = c.at("buckets").get<int32_t>();
  options.prefix = "conformance" + std::to_string(index);
  Limiter limiter(c.at("policy").get<std::string>(), store, options);
  std::map<size_t, Decision> reservations;  // by step index, for the cancels that name them
  size_t n = 0;
  for (const json& step : c.at("steps")) {
    const size_t index = n++;
    SCOPED_TRACE("step " + std::to_string(index) + ": " + step.dump());
    set_time(base + step.at("t").get<int64_t>());
    const std::string op = step.at("op").get<std::string>();
    const std::string key = step.at("key").get<std::string>();
    if (op == "reset") {
      limiter.reset(key);
      continue;
    }
    const int64_t cost = step.at("cost").get<int64_t>();
    const json& e = step.at("expect");
    if (op == "cancel") {
      EXPECT_EQ(limiter.cancel(key, cost, reservations.at(step.at("reservation").get<size_t>())),
                e.at("given").get<bool>());
      continue;
    }
    if (e.contains("error")) {
      EXPECT_EQ(e.at("error").get<std::string>(), "invalid_argument");
      EXPECT_THROW(limiter.reserve(key, cost, step.at("max_wait").get<int64_t>()), InvalidArgument);
      continue;
    }
    Decision d = op == "hit"      ? limiter.hit(key, cost)
                 : op == "peek"   ? limiter.peek(key, cost)
                 : op == "refund" ? limiter.refund(key, cost)
                                  : limiter.reserve(key, cost, step.at("max_wait").get<int64_t>());
    if (op == "reserve") reservations[index] = d;
    EXPECT_EQ(d.wait_us, e.value("wait", 0));
    EXPECT_EQ(d.allowed, e.at("allowed").get<bool>());
    EXPECT_EQ(d.limit, e.at("limit").get<int64_t>());
    EXPECT_EQ(d.remaining, e.at("remaining").get<int64_t>());
    EXPECT_EQ(d.reset_after_us, e.at("reset_after").get<int64_t>());
    EXPECT_EQ(d.retry_after_us, e.at("retry_after").get<int64_t>());
    EXPECT_EQ(d.used, e.at("used").get<int64_t>());
    EXPECT_EQ(d.policy_index, e.value("policy_index", 0));  // given for several policies; else the only one
  }
}

}  // namespace ratewarden::testing
