// The store's SQL: the schema set-up script and the statements a connection prepares (internal).
#pragma once

#include <string>

#include "pg_options.hpp"

namespace ratewarden {

// The schema's version (schema.sql): the row <schema>.<table>_version holds once the set-up script has run.
inline constexpr int kSchemaVersion = 4;

// The set-up script (core/src/postgres/schema.sql and the files cmake/embed_sql.cmake adds) for the options'
// schema, table and persistence: one transaction under an advisory lock, idempotent, failing with SQLSTATE
// kNewerSchemaState when the database holds a newer version.
std::string schema_sql(const PgOptions& options);
inline constexpr const char* kNewerSchemaState = "RW001";

// The query that reads the version (one row, one integer; an error when there is no version table).
std::string version_sql(const PgOptions& options);

// The prepared statements, by name.
inline constexpr const char* kDecideStatement = "rw_decide";
inline constexpr const char* kDecideOneStatement = "rw_decide_one";
inline constexpr const char* kReserveStatement = "rw_reserve";
inline constexpr const char* kCancelStatement = "rw_cancel";
inline constexpr const char* kRefundStatement = "rw_refund";
inline constexpr const char* kResetStatement = "rw_reset";
inline constexpr const char* kSweepStatement = "rw_sweep";
inline constexpr const char* kCheckStatement = "rw_check";
inline constexpr const char* kReadResetsStatement = "rw_read_resets";
struct PgStatement {
  const char* name;
  std::string sql;
};
// Every statement, for the options' schema and table.
std::vector<PgStatement> pg_statements(const PgOptions& options);

}  // namespace ratewarden
