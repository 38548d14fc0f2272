// The client-side floor of the PostgreSQL store: CALLERS threads, each with a connection of its own, running the
// store's single-policy decision (<schema>.<table>_decide_one, prepared, the key a binary bytea, the database's
// clock) in a bare blocking PQexecPrepared loop on random keys of 100,000 with a limit that allows everything.
// Prints decisions per second. The schema must exist (run postgres_bench on the same database first).
//   postgres_libpq_bench CONNINFO CALLERS SECONDS [SCHEMA.TABLE]
// bench/postgres/run.py runs it beside postgres_bench: the difference is the store's own client path.
#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr, "usage: postgres_libpq_bench CONNINFO CALLERS SECONDS [SCHEMA.TABLE]\n");
    return 2;
  }
  const std::string conninfo = argv[1];
  const int callers = std::atoi(argv[2]);
  const double seconds = std::atof(argv[3]);
  const std::string table = argc > 4 ? argv[4] : "ratewarden.limits";
  const std::string sql = "SELECT " + table +
                          "_decide_one($1::bytea, 'fixed_window', 1000000000, 3600000000, 0, 1, true, NULL)";
  std::atomic<bool> stop{false}, failed{false};
  std::atomic<int64_t> total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < callers; ++t) {
    threads.emplace_back([&, t] {
      PGconn* conn = PQconnectdb(conninfo.c_str());
      PGresult* prepared = PQprepare(conn, "decide", sql.c_str(), 0, nullptr);
      if (PQresultStatus(prepared) != PGRES_COMMAND_OK) {
        std::fprintf(stderr, "postgres_libpq_bench: %s", PQerrorMessage(conn));
        failed = true;
      }
      PQclear(prepared);
      uint64_t x = 88172645463325252ull + static_cast<uint64_t>(t) * 7919;
      int64_t done = 0;
      while (!failed && !stop.load(std::memory_order_relaxed)) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const std::string key = "user" + std::to_string(x % 100000);
        const char* values[] = {key.data()};
        const int lengths[] = {static_cast<int>(key.size())};
        const int formats[] = {1};
        PGresult* r = PQexecPrepared(conn, "decide", 1, values, lengths, formats, 0);
        if (PQresultStatus(r) == PGRES_TUPLES_OK) {
          ++done;
        } else {
          std::fprintf(stderr, "postgres_libpq_bench: %s", PQerrorMessage(conn));
          failed = true;
        }
        PQclear(r);
      }
      total += done;
      PQfinish(conn);
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  if (failed) return 1;
  std::printf("%.0f\n", static_cast<double>(total.load()) / seconds);
  return 0;
}
