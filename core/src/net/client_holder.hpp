// The client of a network store in the calling process (internal): what every network store (Redis, Redis Cluster,
// PostgreSQL) needs between its callers and its connections, which live on the library's I/O thread.
//
// The client is made on first use, and again in a forked child, which never touches what the parent's holds: the
// fork handler closed its sockets, and its memory is kept reachable, never used (abandon). A store writes only its
// client (Client: route(Request*) and close(), on the I/O thread) and how a request fails at once (Reject).
#pragma once

#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/io_loop.hpp"
#include "io/per_process.hpp"
#include "metrics/emit.hpp"

namespace ratewarden {

template <typename Client, typename Request>
class ClientHolder {
 public:
  using Factory = std::function<std::unique_ptr<Client>(IoLoop& loop)>;
  // Fails a request at once with `message`, and hands it back to its owner.
  using Reject = void (*)(Request* request, const std::string& message);

  ClientHolder(Factory factory, Reject reject, const std::string& name)
      : factory_(std::move(factory)), reject_(reject), name_(name), closed_message_(name + ": the store was closed") {}

  // No call can race with the destructor (the store is going): the client goes after every task already posted
  // for it, at the end of a turn of the loop. A parent's (in a forked child) is left alone, by `here_`.
  ~ClientHolder() {
    Here* here = here_.release();
    if (here == nullptr) return;
    IoLoop* loop = here->loop;
    loop->post([here, loop] {
      here->client->close();
      loop->defer([here] { delete here; });
    });
  }

  ClientHolder(const ClientHolder&) = delete;
  ClientHolder& operator=(const ClientHolder&) = delete;

  // Sends the requests to the client, in order, on the loop thread; after close(), fails them at once. On the loop
  // thread (a call made from a completion) they are routed now and leave with this turn's output.
  void submit(Request* request) { submit(&request, 1, nullptr); }
  void submit(std::vector<Request*> requests) { submit(requests.data(), requests.size(), &requests); }

  // Closes this process's client: its calls in flight fail, and so do later ones. Calls may race with close(): the
  // client stays (until the destructor) and fails what still reaches it.
  void close() {
    closed_.store(true, std::memory_order_release);
    Here* here = here_.mine();
    if (here == nullptr) return;
    Client* client = here->client.get();
    here->loop->post([client] { client->close(); });
  }

 private:
  // This process's client and the loop it lives on.
  struct Here {
    IoLoop* loop;
    std::unique_ptr<Client> client;
  };

  // `owned`: the vector of `requests`, moved into the posted task (no copy); null for a single request.
  void submit(Request* const* requests, size_t n, std::vector<Request*>* owned) {
    if (closed_.load(std::memory_order_acquire)) {
      for (size_t i = 0; i < n; ++i) reject_(requests[i], closed_message_);
      return;
    }
    Here& here = here_.get([this] {
      if (fork_generation() != 0)
        emit_event(EventKind::fork_detected, name_,
                   "process " + std::to_string(::getpid()) + ", forked, opens its own connections");
      IoLoop& loop = IoLoop::current();
      return new Here{&loop, factory_(loop)};
    });
    Client* client = here.client.get();
    if (IoLoop::on_loop_thread()) {
      for (size_t i = 0; i < n; ++i) client->route(requests[i]);
      return;
    }
    if (owned == nullptr) {
      Request* request = requests[0];
      here.loop->post([client, request] { client->route(request); });
      return;
    }
    here.loop->post([client, batch = std::move(*owned)] {
      for (Request* r : batch) client->route(r);
    });
  }

  Factory factory_;
  Reject reject_;
  PerProcess<Here> here_;
  std::atomic<bool> closed_{false};
  const std::string name_;
  std::string closed_message_;  // set before closed_
};

}  // namespace ratewarden
