// Parses policy strings: "100/minute", "10 per second", "5 per 30 seconds", "1000/1h", "2/500ms", joined by ';' or ','.
#include <cctype>
#include <string>

#include "ratewarden/errors.hpp"
#include "ratewarden/policy.hpp"

namespace ratewarden {
namespace {

constexpr const char* kExpected =
    "expected \"<limit>/<period>\" or \"<limit> per <period>\", such as \"100/minute\", \"10 per second\", "
    "\"5 per 30 seconds\", \"1000/1h\" or \"2/500ms\" (units ms, s, m, h, d; several joined by ';' or ',')";

struct UnitName {
  const char* name;
  int64_t us;
};

constexpr UnitName kUnits[] = {
    {"ms", 1000},           {"msec", 1000},          {"millisecond", 1000},   {"milliseconds", 1000},
    {"s", 1000000},         {"sec", 1000000},        {"secs", 1000000},       {"second", 1000000},
    {"seconds", 1000000},   {"m", 60000000},         {"min", 60000000},       {"mins", 60000000},
    {"minute", 60000000},   {"minutes", 60000000},   {"h", 3600000000},       {"hr", 3600000000},
    {"hrs", 3600000000},    {"hour", 3600000000},    {"hours", 3600000000},   {"d", 86400000000},
    {"day", 86400000000},   {"days", 86400000000},
};

std::string quoted(std::string_view text) {
  constexpr size_t kMax = 200;
  std::string out = "\"";
  out.append(text.substr(0, kMax));
  if (text.size() > kMax) out += "...";
  return out + "\"";
}

class ItemParser {
 public:
  ItemParser(std::string_view item, std::string_view whole) : s_(item), whole_(whole) {}

  Rate parse() {
    skip_space();
    int64_t limit = number("a limit");
    skip_space();
    if (!consume("/") && !consume_word("per")) fail("missing '/' or 'per' after the limit");
    skip_space();
    int64_t count = 1;
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      count = number("a period count");
      skip_space();
    }
    std::string unit = word();
    if (unit.empty()) fail("missing the period unit");
    skip_space();
    if (pos_ != s_.size()) fail("unexpected text " + quoted(s_.substr(pos_)));
    int64_t unit_us = 0;
    for (const auto& u : kUnits)
      if (unit == u.name) unit_us = u.us;
    if (unit_us == 0) fail("unknown unit " + quoted(unit));
    if (limit < 1) fail("the limit must be at least 1");
    if (count < 1) fail("the period must be longer than 0");
    if (count > kMaxPeriodUs / unit_us) fail("the period is longer than 3650 days");
    return Rate{limit, count * unit_us};
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw InvalidArgument("invalid rate limit " + quoted(whole_) + ": " + why + "; " + kExpected);
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool consume(std::string_view token) {
    if (s_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  // "per" must stand alone: "permille" is not "per mille".
  bool consume_word(std::string_view token) {
    size_t end = pos_ + token.size();
    if (s_.substr(pos_, token.size()) != token) return false;
    if (end < s_.size() && std::isalpha(static_cast<unsigned char>(s_[end]))) return false;
    pos_ = end;
    return true;
  }
  int64_t number(const char* what) {
    size_t start = pos_;
    int64_t value = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      if (value > (kMaxLimit * 10)) fail(std::string(what) + " is too large");
      value = value * 10 + (s_[pos_] - '0');
      ++pos_;
    }
    if (pos_ == start) fail(std::string("missing ") + what);
    // "1.5/second" or "1/0.5s" would otherwise fail further on, at the '.', as a missing '/' or unit.
    if (pos_ < s_.size() && s_[pos_] == '.')
      fail(std::string(what) + " must be a whole number: \"3/2s\" is 1.5 a second, \"1/500ms\" one per half second");
    return value;
  }
  std::string word() {
    std::string out;
    while (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_])))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(s_[pos_++])));
    return out;
  }

  std::string_view s_;
  std::string_view whole_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<Rate> parse_rates(std::string_view text) {
  std::vector<Rate> rates;
  size_t start = 0;
  while (true) {
    size_t end = text.find_first_of(";,", start);
    std::string_view item = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (item.find_first_not_of(" \t\r\n") == std::string_view::npos)
      throw InvalidArgument("invalid rate limit " + quoted(text) + ": " +
                            (text.empty() ? "the string is empty" : "an empty item between separators") + "; " +
                            kExpected);
    rates.push_back(ItemParser(item, text).parse());
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return rates;
}

}  // namespace ratewarden
