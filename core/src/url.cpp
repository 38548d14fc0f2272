#include "url.hpp"

#include <cctype>

#include "ratewarden/errors.hpp"

namespace ratewarden {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view in, std::string_view whole) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) invalid_url(whole, "a truncated %-escape");
    int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) invalid_url(whole, "a bad %-escape");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace

// Masks generously rather than precisely: everything from the first ':' after "://" to the LAST '@' goes, so a
// password holding '/', '?' or '@' (which a URL should %-encode, but users paste anyway) never shows.
std::string masked_url(std::string_view text) {
  const size_t scheme_end = text.find("://");
  const size_t at = text.rfind('@');
  if (scheme_end == std::string_view::npos || at == std::string_view::npos || at < scheme_end) {
    return std::string(text.substr(0, 300));
  }
  const size_t colon = text.find(':', scheme_end + 3);
  if (colon == std::string_view::npos || colon > at) return std::string(text.substr(0, 300));  // no password
  return std::string(text.substr(0, colon + 1)) + "***" + std::string(text.substr(at, 300));
}

Url parse_url(std::string_view text) {
  Url url;
  size_t scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0)
    invalid_url(text, "expected scheme://..., such as memory:// or redis://host:port");
  url.scheme = std::string(text.substr(0, scheme_end));
  std::string_view rest = text.substr(scheme_end + 3);

  size_t q = rest.find('?');
  if (q != std::string_view::npos) {
    std::string_view query = rest.substr(q + 1);
    rest = rest.substr(0, q);
    while (!query.empty()) {
      size_t amp = query.find('&');
      std::string_view item = query.substr(0, amp);
      query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
      if (item.empty()) continue;
      size_t eq = item.find('=');
      if (eq == std::string_view::npos || eq == 0) invalid_url(text, "expected key=value in the query");
      std::string key(item.substr(0, eq));
      if (url.query.count(key)) invalid_url(text, "option \"" + key + "\" given twice");
      url.query[key] = percent_decode(item.substr(eq + 1), text);
    }
  }
  size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    url.path = std::string(rest.substr(slash + 1));
    rest = rest.substr(0, slash);
  }
  size_t at = rest.rfind('@');
  if (at != std::string_view::npos) {
    std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    size_t colon = userinfo.find(':');
    url.user = percent_decode(userinfo.substr(0, colon), text);
    if (colon != std::string_view::npos) {
      url.password = percent_decode(userinfo.substr(colon + 1), text);
      url.has_password = true;
    }
  }
  url.hosts = std::string(rest);
  return url;
}

void invalid_url(std::string_view text, const std::string& why) {
  throw InvalidArgument("invalid store URL \"" + masked_url(text) + "\": " + why);
}

std::pair<std::string, int> split_host_port(std::string_view text, const std::string& hostport, int default_port) {
  std::string host = hostport;
  std::string port;
  if (!host.empty() && host[0] == '[') {
    const size_t close = host.find(']');
    if (close == std::string::npos) invalid_url(text, "unclosed '[' in the host");
    if (close + 1 < host.size()) {
      if (host[close + 1] != ':') invalid_url(text, "expected ':' after ']'");
      port = host.substr(close + 2);
      if (port.empty()) invalid_url(text, "expected a port number after ':'");
    }
    host = host.substr(1, close - 1);
  } else if (const size_t colon = host.rfind(':'); colon != std::string::npos) {
    port = host.substr(colon + 1);
    host = host.substr(0, colon);
    if (port.empty()) invalid_url(text, "expected a port number after ':'");
  }
  if (port.empty()) return {host, default_port};
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    invalid_url(text, "expected a port number after ':'");
  const int n = std::stoi(port);
  if (n < 1 || n > 65535) invalid_url(text, "the port must be between 1 and 65535");
  return {host, n};
}

int64_t take_int(Url& url, const std::string& name, int64_t fallback, int64_t min, int64_t max) {
  auto it = url.query.find(name);
  if (it == url.query.end()) return fallback;
  const std::string value = it->second;
  url.query.erase(it);
  int64_t n = 0;
  bool ok = !value.empty() && value.size() <= 18;
  for (char c : value) {
    if (!std::isdigit(static_cast<unsigned char>(c))) ok = false;
    n = n * 10 + (c - '0');
  }
  if (!ok || n < min || n > max)
    throw InvalidArgument("store option " + name + "=\"" + value + "\" must be an integer between " +
                          std::to_string(min) + " and " + std::to_string(max));
  return n;
}

int64_t take_duration_us(Url& url, const std::string& name, int64_t fallback_us) {
  auto it = url.query.find(name);
  if (it == url.query.end()) return fallback_us;
  const std::string value = it->second;
  url.query.erase(it);
  size_t digits = 0;
  int64_t n = 0;
  while (digits < value.size() && digits < 10 && std::isdigit(static_cast<unsigned char>(value[digits])))
    n = n * 10 + (value[digits++] - '0');
  const std::string unit = value.substr(digits);
  const int64_t scale = unit == "us" ? 1 : unit.empty() || unit == "ms" ? 1000 : unit == "s" ? 1000000 : 0;
  if (digits == 0 || scale == 0 || n * scale < 1000 || n * scale > 3600LL * 1000000)
    throw InvalidArgument("store option " + name + "=\"" + value +
                          "\" must be a duration between 1ms and 1h, such as 50ms or 2s");
  return n * scale;
}

void reject_unknown_options(const Url& url, std::string_view text) {
  if (!url.query.empty()) invalid_url(text, "unknown option \"" + url.query.begin()->first + "\"");
}

}  // namespace ratewarden
