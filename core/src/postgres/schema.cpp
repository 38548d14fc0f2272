#include "schema.hpp"

#include <vector>

namespace ratewarden {
namespace {

const char* const kSchemaSource =
#include "postgres_schema.inc"
    ;

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// schema and table are identifiers the URL parser checked ([a-z_][a-z0-9_]*): safe to write into SQL.
std::string with_names(std::string sql, const PgOptions& o) {
  return replace_all(replace_all(std::move(sql), "@schema@", o.schema), "@table@", o.table);
}

}  // namespace

std::string schema_sql(const PgOptions& o) {
  return replace_all(replace_all(with_names(kSchemaSource, o), "@unlogged@", o.unlogged ? "UNLOGGED" : ""),
                     "@version@", std::to_string(kSchemaVersion));
}

std::string version_sql(const PgOptions& o) { return with_names("SELECT version FROM @schema@.@table@_version", o); }

std::vector<PgStatement> pg_statements(const PgOptions& o) {
  return {
      {kDecideStatement,
       with_names("SELECT @schema@.@table@_decide($1::bytea[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], "
                  "$6::bigint, $7::boolean, $8::bigint)", o)},
      {kDecideOneStatement,
       with_names("SELECT @schema@.@table@_decide_one($1::bytea, $2::text, $3::bigint, $4::bigint, $5::bigint, "
                  "$6::bigint, $7::boolean, $8::bigint)", o)},
      {kReserveStatement,
       with_names("SELECT @schema@.@table@_reserve($1::bytea[], $2::text[], $3::bigint[], $4::bigint[], "
                  "$5::bigint[], $6::bigint, $7::bigint, $8::bigint)", o)},
      {kCancelStatement,
       with_names("SELECT @schema@.@table@_cancel($1::bytea, $2::text, $3::bigint, $4::bigint, $5::bigint, "
                  "$6::bigint, $7::bigint, $8::bigint)", o)},
      {kRefundStatement,
       with_names("SELECT @schema@.@table@_refund($1::bytea[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], "
                  "$6::bigint, $7::bigint)", o)},
      {kResetStatement, with_names("SELECT @schema@.@table@_reset($1::bytea[], $2::bytea)", o)},
      {kReadResetsStatement,
       with_names("SELECT cursor, gap, epoch, tags FROM @schema@.@table@_read_resets($1::bigint, $2::integer)", o)},
      {kSweepStatement, with_names("SELECT deleted, next_block FROM @schema@.@table@_sweep($1::bigint, $2::bigint)", o)},
      {kCheckStatement, "SELECT 1"},
  };
}

}  // namespace ratewarden
