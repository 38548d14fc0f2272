#include "toxiproxy.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace ratewarden::testing {

using nlohmann::json;

std::string Toxiproxy::request(const std::string& method, const std::string& path, const std::string& body) const {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("toxiproxy: no socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  const std::string out = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                          "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                          "\r\n\r\n" + body;
  std::string in;
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  for (size_t sent = 0; ok && sent < out.size();) {
    const ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) sent += static_cast<size_t>(n);
  }
  while (ok) {  // Connection: close — the answer ends with the connection
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  // "HTTP/1.1 201 Created\r\n..."
  const size_t space = in.find(' ');
  const int status = ok && space != std::string::npos ? std::atoi(in.c_str() + space + 1) : 0;
  const size_t head_end = in.find("\r\n\r\n");
  const std::string answer = head_end == std::string::npos ? "" : in.substr(head_end + 4);
  if (status < 200 || status >= 300)
    throw std::runtime_error("toxiproxy " + method + " " + path + ": " + std::to_string(status) + " " + answer);
  return answer;
}

void Toxiproxy::add(const std::string& proxy, const std::string& name, const std::string& type,
                    const std::string& stream, const json& attributes) const {
  request("POST", "/proxies/" + proxy + "/toxics",
          json{{"name", name}, {"type", type}, {"stream", stream}, {"toxicity", 1.0}, {"attributes", attributes}}
              .dump());
}

void Toxiproxy::remove(const std::string& proxy, const std::string& name) const {
  request("DELETE", "/proxies/" + proxy + "/toxics/" + name, "");
}

void Toxiproxy::enable(const std::string& proxy, bool enabled) const {
  request("POST", "/proxies/" + proxy, json{{"enabled", enabled}}.dump());
}

void Toxiproxy::reset() const { request("POST", "/reset", ""); }

}  // namespace ratewarden::testing
