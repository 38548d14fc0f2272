-- ratewarden's PostgreSQL schema, version @version@ (docs/deployment.md, "PostgreSQL"; 2 added <table>_reserve,
-- <table>_cancel and <table>_refund, 3 <table>_decide_one, 4 the version row <table>_version). A store runs this
-- once, when its first connection finds no version row or an older one (unless ?create=0); it is idempotent and
-- serialised by an advisory lock, so many processes may start at once, and it refuses to replace a newer schema.
-- The build embeds schema.sql, then core/src/algorithms/<algorithm>.sql for every row of the algorithm table, the
-- generated dispatcher rw1_evaluate, then decide.sql. The placeholders (schema, table, unlogged and version, each
-- between two '@') are replaced by the store: validated identifiers of lower-case letters, digits and '_'. To create
-- it by hand (for stores with ?create=0):
--   scripts/postgres_schema.sh [schema [table [unlogged|logged]]] | psql ...   (docs/deployment.md)
SELECT pg_advisory_xact_lock(7418412635419208501);
-- The store's sessions commit asynchronously (their decisions may be lost in a crash); the schema may not be.
SET LOCAL synchronous_commit = on;

-- A newer library's schema is never replaced by an older one's functions: the whole transaction fails instead.
DO $rw$
DECLARE
  found integer;
BEGIN
  IF to_regclass('@schema@.@table@_version') IS NOT NULL THEN
    EXECUTE 'SELECT max(version) FROM @schema@.@table@_version' INTO found;
    IF found > @version@ THEN
      RAISE EXCEPTION 'ratewarden: @schema@.@table@ holds schema version %, newer than this library''s @version@: '
        'upgrade the library (a database is never downgraded)', found USING ERRCODE = 'RW001';
    END IF;
  END IF;
END $rw$;

CREATE SCHEMA IF NOT EXISTS @schema@;

-- One row per storage key and policy (docs/key-format.md): the algorithm's state as integers, and the instant (µs,
-- the database's clock) after which the row no longer affects any decision and the sweep may delete it.
-- fillfactor 70: room on each page for the new version of a row, so that updates are HOT (no index entry; expires_at
-- is deliberately not indexed) and a hot key's dead versions are pruned page by page without waiting for VACUUM.
CREATE @unlogged@ TABLE IF NOT EXISTS @schema@.@table@ (
  key bytea PRIMARY KEY,
  state bigint[],
  expires_at bigint NOT NULL
) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.05);
COMMENT ON TABLE @schema@.@table@ IS 'ratewarden store state (its schema version: @table@_version)';

-- The schema's version, one row: what every store reads when its first connection opens (a logged table: it
-- outlives a crash, as the functions do). Committed with the rest of this script: it names a schema all there.
CREATE TABLE IF NOT EXISTS @schema@.@table@_version (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  version integer NOT NULL
);
INSERT INTO @schema@.@table@_version (version) VALUES (@version@) ON CONFLICT (one) DO UPDATE SET version = @version@;

-- The reset log of the hybrid modes (decide.sql, <table>_reset): n, the user key reset.
CREATE @unlogged@ TABLE IF NOT EXISTS @schema@.@table@_resets (
  n bigint PRIMARY KEY,
  tag bytea NOT NULL
);

-- The database's clock in µs: read after the call's row locks are held.
CREATE OR REPLACE FUNCTION @schema@.rw1_clock() RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint
$$;
