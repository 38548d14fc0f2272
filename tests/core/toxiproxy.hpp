// Toxiproxy's HTTP API, for the tests that put it between the library and its store (launch.py --toxiproxy starts
// it and a proxy in front of every node, named "node0", "node1"...). A toxic is a fault on one direction of a proxy:
// "downstream" (server to client) or "upstream" (client to server); Toxiproxy's own documentation lists the types
// and their attributes (latency: latency, jitter in ms; bandwidth: rate in KB/s; slicer: average_size, size_variation,
// delay in µs; reset_peer: timeout in ms; timeout: timeout in ms; limit_data: bytes).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ratewarden::testing {

class Toxiproxy {
 public:
  explicit Toxiproxy(int api_port) : port_(api_port) {}

  // Adds a toxic to every connection of `proxy`, open or to come. Throws on an error answer.
  void add(const std::string& proxy, const std::string& name, const std::string& type, const std::string& stream,
           const nlohmann::json& attributes) const;
  void remove(const std::string& proxy, const std::string& name) const;
  // A disabled proxy closes its connections and refuses new ones.
  void enable(const std::string& proxy, bool enabled) const;
  // Every proxy enabled, every toxic removed.
  void reset() const;

 private:
  // One request on a fresh connection; the answer's body. Throws unless the status is 2xx.
  std::string request(const std::string& method, const std::string& path, const std::string& body) const;
  int port_;
};

}  // namespace ratewarden::testing
