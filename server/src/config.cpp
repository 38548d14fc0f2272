#include "config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "ratewarden/errors.hpp"

namespace ratewarden::server {
namespace {

namespace fs = std::filesystem;

// The keys each level takes: envoyproxy/ratelimit's, then ratewarden's (on_store_error; policy, algorithm, burst,
// buckets, key, prefix). value_to_metric, share_threshold and metadata are accepted and change nothing here.
const std::set<std::string> kFileKeys = {"domain", "descriptors", "on_store_error"};
const std::set<std::string> kDescriptorKeys = {"key",           "value",           "rate_limit",  "descriptors",
                                               "shadow_mode",   "detailed_metric", "quota_mode",  "value_to_metric",
                                               "share_threshold", "metadata"};
const std::set<std::string> kRateLimitKeys = {"unit",   "requests_per_unit", "unlimited", "name", "replaces", "policy",
                                              "algorithm", "burst",           "buckets",   "key",  "prefix"};

class Loader {
 public:
  Loader(std::string file, std::shared_ptr<Store> store) : file_(std::move(file)), store_(std::move(store)) {}

  Domain domain(const YAML::Node& root) {
    if (!root.IsMap()) fail(root, "a config file is a map (domain, descriptors)");
    resolve_merges(root, 0);
    check_keys(root, kFileKeys);
    Domain d;
    d.file = file_;
    d.name = scalar(root, "domain").value_or("");
    if (d.name.empty()) fail(root, "config file cannot have empty domain");
    if (auto on_error = scalar(root, "on_store_error")) {
      try {
        d.on_store_error = parse_on_store_error(*on_error);
      } catch (const InvalidArgument& e) {
        fail(root["on_store_error"], e.what());
      }
    }
    domain_ = d.name;
    d.descriptors = nodes(root["descriptors"], d.name, {});
    check_replaces(d.descriptors);
    return d;
  }

 private:
  [[noreturn]] void fail(const YAML::Node& at, const std::string& what) const {
    const int line = at.IsDefined() ? at.Mark().line + 1 : 0;
    throw InvalidArgument(file_ + (line > 0 ? ":" + std::to_string(line) : "") + ": " + what);
  }

  // YAML 1.1's merge keys (`<<: *anchor`, or a list of anchors), which yaml-cpp leaves as a key named "<<": each
  // merged map's keys are added where the map has none of its own (in a list, the first map's win), as the peer's
  // parser reads them.
  void resolve_merges(YAML::Node node, int depth) const {
    if (depth > 64) fail(node, "config error, nested over 64 levels deep");
    if (node.IsSequence())
      for (YAML::Node item : node) resolve_merges(item, depth + 1);
    if (!node.IsMap()) return;
    for (auto item : node) resolve_merges(item.second, depth + 1);
    const YAML::Node& view = node;  // lookups that add no key
    const YAML::Node merged = view["<<"];
    if (!merged.IsDefined()) return;
    std::vector<YAML::Node> maps;
    if (merged.IsMap()) maps.push_back(merged);
    if (merged.IsSequence())
      for (const YAML::Node& map : merged) maps.push_back(map);
    if (maps.empty() || !std::all_of(maps.begin(), maps.end(), [](const YAML::Node& m) { return m.IsMap(); }))
      fail(merged, "config error, '<<' merges a map or a list of maps");
    node.remove("<<");
    for (const YAML::Node& map : maps)
      for (const auto& item : map)
        if (!item.first.IsScalar() || !view[item.first.Scalar()].IsDefined())
          node.force_insert(item.first, item.second);
  }

  void check_keys(const YAML::Node& map, const std::set<std::string>& allowed) const {
    for (const auto& item : map) {
      if (!item.first.IsScalar()) fail(item.first, "config error, a key that is not a string");
      const std::string key = item.first.as<std::string>();
      if (allowed.count(key) == 0) fail(item.first, "config error, unknown key '" + key + "'");
    }
  }

  std::optional<std::string> scalar(const YAML::Node& map, const char* key) const {
    const YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) return std::nullopt;
    if (!v.IsScalar()) fail(v, std::string("'") + key + "' must be a value, not a list or a map");
    return v.as<std::string>();
  }

  // YAML 1.1's booleans, as the peer's parser (gopkg.in/yaml.v2) reads them: true/false, yes/no, y/n, on/off, each
  // in lower, Title or UPPER case.
  bool boolean(const YAML::Node& map, const char* key) const {
    const std::optional<std::string> v = scalar(map, key);
    if (!v) return false;
    static const std::set<std::string> yes = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                              "y",    "Y",    "on",   "On",  "ON"};
    static const std::set<std::string> no = {"false", "False", "FALSE", "no", "No", "NO",
                                             "n",     "N",     "off",   "Off", "OFF"};
    if (yes.count(*v) != 0) return true;
    if (no.count(*v) != 0) return false;
    fail(map[key], std::string("'") + key + "' must be true or false, got '" + *v + "'");
  }

  // A whole number in [0, max], spelt as YAML 1.1 (the peer's parser) spells one: '_'s anywhere, a '+', 0x hex, 0b
  // binary, 0o or a leading 0 octal. A float or anything else is an error (as the peer's config checker says).
  std::optional<int64_t> integer(const YAML::Node& map, const char* key, int64_t max) const {
    const std::optional<std::string> v = scalar(map, key);
    if (!v) return std::nullopt;
    const std::optional<int64_t> n = yaml11_integer(*v);
    if (!n || *n > max)
      fail(map[key], std::string("'") + key + "' must be a whole number from 0 to " + std::to_string(max) +
                         ", got '" + *v + "'");
    return n;
  }

  // A non-negative YAML 1.1 integer, or none (a sign other than '+', a float, another digit than the base's).
  static std::optional<int64_t> yaml11_integer(const std::string& text) {
    std::string digits;
    for (char c : text)
      if (c != '_') digits += c;
    if (!digits.empty() && digits[0] == '+') digits.erase(0, 1);
    int base = 10;
    if (digits.size() > 2 && digits[0] == '0' && std::strchr("xXbBoO", digits[1]) != nullptr) {
      const char kind = static_cast<char>(std::tolower(static_cast<unsigned char>(digits[1])));
      base = kind == 'x' ? 16 : kind == 'b' ? 2 : 8;
      digits.erase(0, 2);
    } else if (digits.size() > 1 && digits[0] == '0') {
      base = 8;
    }
    if (digits.empty()) return std::nullopt;
    int64_t n = 0;
    for (char c : digits) {
      const unsigned char u = static_cast<unsigned char>(c);
      const int d = std::isdigit(u) ? c - '0' : std::isxdigit(u) ? std::tolower(u) - 'a' + 10 : base;
      if (d >= base) return std::nullopt;
      n = n * base + d;
      if (n > (int64_t{1} << 40)) return n;  // over every bound (refused whatever follows), before it overflows
    }
    return n;
  }

  // `keys`: the entry keys of the levels above (what a key template may name).
  std::vector<Node> nodes(const YAML::Node& list, const std::string& path, const std::vector<std::string>& keys) {
    std::vector<Node> out;
    if (!list.IsDefined() || list.IsNull()) return out;
    if (!list.IsSequence()) fail(list, "'descriptors' must be a list of maps");
    std::set<std::string> seen;
    for (const YAML::Node& item : list) {
      if (!item.IsMap()) fail(item, "'descriptors' must be a list of maps");
      Node n = node(item, path, keys);
      const std::string composite = n.key + (n.value ? "_" + *n.value : "");
      if (!seen.insert(composite).second)
        fail(item, "duplicate descriptor composite key '" + path + "." + composite + "'");
      out.push_back(std::move(n));
    }
    return out;
  }

  Node node(const YAML::Node& item, const std::string& path, std::vector<std::string> keys) {
    check_keys(item, kDescriptorKeys);
    Node n;
    n.key = scalar(item, "key").value_or("");
    if (n.key.empty()) fail(item, "descriptor has empty key");
    n.value = scalar(item, "value");
    if (n.value && n.value->empty()) n.value.reset();  // an empty value matches any, as a missing one
    n.wildcard = n.value && n.value->find('*') != std::string::npos;
    n.shadow_mode = boolean(item, "shadow_mode");
    n.quota_mode = boolean(item, "quota_mode");
    n.detailed_metric = boolean(item, "detailed_metric");
    const std::string here = path + "." + n.key + (n.value ? "_" + *n.value : "");
    keys.push_back(n.key);
    if (item["rate_limit"].IsDefined() && !item["rate_limit"].IsNull()) n.rule = rule(item["rate_limit"], here, keys);
    n.children = nodes(item["descriptors"], here, keys);
    return n;
  }

  Rule rule(const YAML::Node& map, const std::string& path, const std::vector<std::string>& keys) {
    if (!map.IsMap()) fail(map, "'rate_limit' must be a map");
    check_keys(map, kRateLimitKeys);
    Rule r;
    r.metric_name = path;
    r.name = scalar(map, "name").value_or("");
    r.unlimited = boolean(map, "unlimited");
    const std::optional<std::string> unit = scalar(map, "unit");
    const std::optional<std::string> policy = scalar(map, "policy");
    if (r.unlimited) {
      if (unit) fail(map["unit"], "should not specify rate limit unit when unlimited");
      if (policy) fail(map["policy"], "should not specify a policy when unlimited");
    } else if (policy) {
      if (unit || map["requests_per_unit"].IsDefined())
        fail(map["policy"], "a rate limit has a policy or a unit and requests_per_unit, not both");
      r.policy = *policy;
    } else {
      r.unit = parse_unit(map, unit.value_or(""));
      r.requests_per_unit = integer(map, "requests_per_unit", kMaxLimit).value_or(0);
      r.policy = std::to_string(r.requests_per_unit) + "/" + std::to_string(unit_seconds(r.unit)) + "s";
    }
    if (const YAML::Node replaces = map["replaces"]; replaces.IsDefined() && !replaces.IsNull()) {
      if (!replaces.IsSequence()) fail(replaces, "'replaces' must be a list of maps with a name");
      for (const YAML::Node& entry : replaces) {
        if (!entry.IsMap()) fail(entry, "'replaces' must be a list of maps with a name");
        check_keys(entry, {"name"});
        const std::string name = scalar(entry, "name").value_or("");
        if (name.empty()) fail(entry, "should not have an empty replaces entry");
        if (name == r.name) fail(entry, "replaces should not contain name of same descriptor");
        r.replaces.push_back(name);
      }
    }
    if (const std::optional<std::string> key = scalar(map, "key")) r.key_template = key_template(map["key"], *key, keys);
    if (r.unlimited) return r;
    if (r.unit != Unit::unknown && r.requests_per_unit == 0) {  // refuses every hit without the store
      r.epoch_window = true;  // its reset is the peer's epoch window, whatever the algorithm or key
      return r;
    }
    LimiterOptions options;
    options.name = path.substr(0, 200);
    options.prefix = scalar(map, "prefix");
    try {
      if (const std::optional<std::string> a = scalar(map, "algorithm")) options.algorithm = parse_algorithm(*a);
      options.burst = integer(map, "burst", kMaxLimit);
      options.buckets = integer(map, "buckets", kMaxBuckets);
      r.limiter = std::make_shared<Limiter>(r.policy, store_, options);
    } catch (const InvalidArgument& e) {
      fail(map, e.what());
    }
    // A shared key is a library limiter's: its windows are the core's, not aligned to the epoch.
    r.epoch_window = r.unit != Unit::unknown && options.algorithm == Algorithm::fixed_window && r.key_template.empty();
    return r;
  }

  std::vector<std::pair<bool, std::string>> key_template(const YAML::Node& at, const std::string& text,
                                                         const std::vector<std::string>& keys) const {
    std::vector<std::pair<bool, std::string>> parts;
    size_t i = 0;
    while (i < text.size()) {
      const size_t open = text.find('{', i);
      if (open == std::string::npos) {
        parts.emplace_back(false, text.substr(i));
        break;
      }
      const size_t close = text.find('}', open);
      if (close == std::string::npos) fail(at, "'key' has a '{' without its '}': \"" + text + "\"");
      if (open > i) parts.emplace_back(false, text.substr(i, open - i));
      const std::string name = text.substr(open + 1, close - open - 1);
      if (std::find(keys.begin(), keys.end(), name) == keys.end())
        fail(at, "'key' names {" + name + "}, which is not a key of this descriptor or the ones above it");
      parts.emplace_back(true, name);
      i = close + 1;
    }
    if (parts.empty()) fail(at, "'key' is empty");
    return parts;
  }

  Unit parse_unit(const YAML::Node& map, std::string name) const {
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
    static const std::map<std::string, Unit> units = {{"SECOND", Unit::second}, {"MINUTE", Unit::minute},
                                                      {"HOUR", Unit::hour},     {"DAY", Unit::day},
                                                      {"WEEK", Unit::week},     {"MONTH", Unit::month},
                                                      {"YEAR", Unit::year}};
    const auto it = units.find(name);
    if (it == units.end()) fail(map["unit"].IsDefined() ? map["unit"] : map, "invalid rate limit unit '" + name + "'");
    return it->second;
  }

  // `replaces` names another rule: one of the domain's (a typo would silently replace nothing).
  void check_replaces(const std::vector<Node>& top) const {
    std::set<std::string> names;
    collect_names(top, names);
    std::vector<const Node*> stack;
    for (const Node& n : top) stack.push_back(&n);
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      for (const Node& c : n->children) stack.push_back(&c);
      if (!n->rule) continue;
      for (const std::string& name : n->rule->replaces)
        if (names.count(name) == 0)
          throw InvalidArgument(file_ + ": replaces names '" + name + "', which no rate limit of domain '" +
                                domain_ + "' is named");
    }
  }

  static void collect_names(const std::vector<Node>& nodes, std::set<std::string>& names) {
    for (const Node& n : nodes) {
      if (n.rule && !n.rule->name.empty()) names.insert(n.rule->name);
      collect_names(n.children, names);
    }
  }

  const std::string file_;
  const std::shared_ptr<Store> store_;
  std::string domain_;
};

}  // namespace

int64_t unit_seconds(Unit unit) {
  switch (unit) {
    case Unit::second: return 1;
    case Unit::minute: return 60;
    case Unit::hour: return 3600;
    case Unit::day: return 86400;
    case Unit::week: return 7 * 86400;
    case Unit::month: return 30 * 86400;
    case Unit::year: return 365 * 86400;
    case Unit::unknown: break;
  }
  return 0;
}

Domain load_domain(const std::string& text, const std::string& file, const std::shared_ptr<Store>& store) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InvalidArgument(file + ":" + std::to_string(e.mark.line + 1) + ": error loading config file: " + e.msg);
  }
  return Loader(file, store).domain(root);
}

std::shared_ptr<const Config> load_config(const std::string& dir, const std::shared_ptr<Store>& store) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InvalidArgument("config: " + dir + " is not a directory");
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) files.push_back(it->path());  // through symlinks, as Kubernetes mounts them
  }
  if (ec) throw InvalidArgument("config: cannot read " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  auto config = std::make_shared<Config>();
  for (const fs::path& path : files) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) throw InvalidArgument("config: cannot read " + path.string());
    Domain d = load_domain(text.str(), path.string(), store);
    if (config->domains.count(d.name) != 0)
      throw InvalidArgument(path.string() + ": duplicate domain '" + d.name + "' in config file (also in " +
                            config->domains[d.name].file + ")");
    config->domains.emplace(d.name, std::move(d));
  }
  return config;
}

}  // namespace ratewarden::server
