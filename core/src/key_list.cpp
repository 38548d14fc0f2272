#include "ratewarden/key_list.hpp"

#include "ratewarden/errors.hpp"

namespace ratewarden {
namespace {

std::string checked_name(std::string name) {
  const bool ok = !name.empty() && name.size() <= 64 &&
                  name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") ==
                      std::string::npos;
  if (!ok) throw InvalidArgument("a KeyList name is 1 to 64 letters, digits, '_', '.' or '-', got \"" + name + "\"");
  return name;
}

std::string policy_of(int64_t duration_us) {
  if (duration_us < 1000 || duration_us > KeyList::kMaxDurationUs)
    throw InvalidArgument("a KeyList's duration must be from 1 ms to 3650 days, got " + std::to_string(duration_us) +
                          " us");
  const int64_t ms = (duration_us + 999) / 1000;
  return ms <= 1000000000 ? "1/" + std::to_string(ms) + "ms" : "1/" + std::to_string((ms + 999) / 1000) + "s";
}

std::string prefix_of(const Store* store, const std::string& name) {
  if (store == nullptr) throw InvalidArgument("a KeyList needs a store");
  std::string prefix = store->key_prefix() + ":list:" + name;
  if (prefix.size() > 256)
    throw InvalidArgument("a KeyList's key prefix \"<store's prefix>:list:<name>\" must be at most 256 bytes, got " +
                          std::to_string(prefix.size()) + ": a shorter name or store prefix");
  return prefix;
}

// The list's entries are a limiter's decisions: counted under "list:<name>" (stats.hpp), not a policy string.
LimiterOptions limiter_options(const std::string& name, const std::string& prefix) {
  LimiterOptions o;
  o.name = "list:" + name;
  o.prefix = prefix;
  return o;
}

}  // namespace

KeyList::KeyList(std::string name, std::shared_ptr<Store> store, int64_t duration_us)
    : name_(checked_name(std::move(name))),
      duration_us_(duration_us),
      policy_(policy_of(duration_us)),
      prefix_(prefix_of(store.get(), name_)),
      limiter_(policy_, std::move(store), limiter_options(name_, prefix_)) {}

void KeyList::add(std::string_view key) {
  limiter_.reset(key);
  limiter_.hit(key);
}

void KeyList::remove(std::string_view key) { limiter_.reset(key); }

bool KeyList::contains(std::string_view key) { return expires_in_us(key) > 0; }

int64_t KeyList::expires_in_us(std::string_view key) { return limiter_.peek(key).retry_after_us; }

}  // namespace ratewarden
