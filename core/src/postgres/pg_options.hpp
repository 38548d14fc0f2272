// What a postgres:// URL configures (internal; core/src/postgres/pg_url.cpp reads it).
#pragma once

#include <cstdint>
#include <string>

#include "ratewarden/clock.hpp"
#include "ratewarden/network_options.hpp"

namespace ratewarden {

struct PgOptions : NetworkOptions {
  PgOptions() {
    // Per call, also the session's statement_timeout. 1 s, not Redis's 250 ms: a hit waits for the row lock of
    // every hit on its key before it, and on a busy machine that tail passed 250 ms (docs/deployment.md, "Hot keys").
    timeout_us = 1000000;
    pool = 8;  // at most: opened as calls at once need them (pg_client.cpp)
  }

  std::string host = "127.0.0.1";  // or a Unix socket directory (?host=/path)
  int port = 5432;
  std::string user;
  std::string password;
  bool has_password = false;
  std::string dbname;
  std::string schema = "ratewarden";
  std::string table = "limits";
  bool create = true;     // create the schema on first use
  bool unlogged = true;   // an UNLOGGED table (only when the store creates it)
  int64_t sweep_us = 1000000;  // how often expired rows are swept; 0: never
  int64_t sweep_blocks = 64;   // table blocks per sweep batch (one short transaction each)
  Clock clock;            // tests: the "now" passed to the database instead of its clock
};

}  // namespace ratewarden
