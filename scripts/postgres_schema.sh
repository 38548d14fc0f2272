#!/usr/bin/env bash
# Prints the PostgreSQL store's schema script for a DBA to run, when stores open with ?create=0:
#   scripts/postgres_schema.sh [schema [table [unlogged|logged]]] | psql "postgres://admin@db/app"
# Defaults: ratewarden, limits, unlogged — the URL's ?schema=, ?table= and ?unlogged= defaults. It is the very text the
# store runs on first use (one transaction under an advisory lock, idempotent): docs/deployment.md, "PostgreSQL".
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
schema=${1:-ratewarden}
table=${2:-limits}
persistence=${3:-unlogged}
for name in "$schema" "$table"; do
  [[ "$name" =~ ^[a-z_][a-z0-9_]{0,47}$ ]] || { echo "not a lower-case identifier: $name" >&2; exit 2; }
done
case "$persistence" in
  unlogged) unlogged=UNLOGGED ;;
  logged) unlogged= ;;
  *) echo "expected unlogged or logged, not $persistence" >&2; exit 2 ;;
esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cmake -DTABLE="$root/core/include/ratewarden/algorithm_table.hpp" -DSQL_DIR="$root/core/src/algorithms" \
  -DPG_DIR="$root/core/src/postgres" -DOUTPUT="$out/schema.inc" -DSQL_OUTPUT="$out/schema.sql" \
  -P "$root/cmake/embed_sql.cmake"
version=$(sed -n 's/^inline constexpr int kSchemaVersion = \([0-9]*\);$/\1/p' "$root/core/src/postgres/schema.hpp")
[ -n "$version" ] || { echo "no kSchemaVersion in core/src/postgres/schema.hpp" >&2; exit 2; }
echo "BEGIN;"
sed -e "s/@schema@/$schema/g" -e "s/@table@/$table/g" -e "s/@unlogged@/$unlogged/g" -e "s/@version@/$version/g" \
  "$out/schema.sql"
echo "COMMIT;"
