// The I/O-thread side of a Sentinel store: the sentinels, the master they name, and finding it again (internal).
//
// A round of discovery asks the sentinels in turn (the last one that answered first) for the master's address, then
// asks that server ROLE: only a server that says "master" is used. A round runs when the store is first used, when
// a call on the master fails (its connection dropped, refused or timed out), when the master answers -READONLY (it
// is a replica now), and when the subscription hears +switch-master; at most one round every 100 ms. While no
// master is known, calls wait for the round under way; a round that fails fails them with its reason.
//
// Which calls are sent again: only those the master cannot have run — never written to its connection (queued while
// it connected), or refused with -READONLY (a replica runs no write). A call written before its connection dropped
// may have been applied: it fails, and the caller's on_store_error decides.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client.hpp"
#include "connection.hpp"
#include "endpoint.hpp"
#include "node.hpp"
#include "ratewarden/sentinel_store.hpp"

namespace ratewarden {

class SentinelClient final : public RedisClient, public RequestOwner, public Deadlines {
 public:
  SentinelClient(IoLoop& loop, const SentinelStoreOptions& options, std::shared_ptr<TlsContext> tls, std::string name,
                 std::shared_ptr<CallMetrics> metrics);
  ~SentinelClient() override;

  void route(RedisRequest* request) override;
  void close() override;

  void on_done(RedisRequest& request) override;  // from the master's node
  int64_t next_deadline_us() const override;
  void expire(int64_t now_us) override;

 private:
  class Query;
  class Subscriber;

  void dispatch(RedisRequest* request);
  void complete(RedisRequest* request);
  // The master's node is in doubt: a round finds it again (`suspect`: calls wait for it meanwhile).
  void want_master(bool suspect);
  void start_round();
  void ask_sentinel(size_t attempt);
  void on_sentinel_reply(size_t attempt, const RedisRequest& request);
  void check_role(size_t attempt, const std::string& host, int port);
  void on_role_reply(size_t attempt, RedisNode& node, const RedisRequest& request);
  void round_done(RedisNode* master, const std::string& error);
  RedisNode& data_node(const std::string& host, int port);

  IoLoop& loop_;
  const SentinelStoreOptions options_;
  const std::shared_ptr<TlsContext> tls_;
  const std::string name_;
  const std::shared_ptr<CallMetrics> metrics_;
  std::vector<RedisEndpoint> sentinel_endpoints_;  // before subscriber_, whose connections refer to them
  std::vector<std::unique_ptr<RedisNode>> sentinels_;
  std::map<std::pair<std::string, int>, std::unique_ptr<RedisNode>> nodes_;  // the servers named master so far
  RedisNode* master_ = nullptr;
  bool suspect_ = true;  // calls wait for a round before they go to master_
  bool in_round_ = false;
  bool round_scheduled_ = false;
  bool round_again_ = false;  // asked for while a round was under way: one more after it
  int64_t last_round_us_ = INT64_MIN / 2;
  size_t first_sentinel_ = 0;  // the last one that answered: asked first
  size_t unknown_ = 0;         // sentinels of this round that do not know the service
  std::string last_error_;     // of this round's sentinels
  std::string failure_;        // why the last round found no master ("" when it found one)
  std::vector<RedisRequest*> waiting_;
  std::unique_ptr<Subscriber> subscriber_;
  bool closing_ = false;
  bool watched_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace ratewarden
