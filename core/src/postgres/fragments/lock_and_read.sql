-- The start of a call on the policies of one key (<table>_decide, <table>_reserve): the rows, the states, the clock.
-- A hit locks the call's rows, in key order (no deadlock between calls that share keys), creating the absent ones so
-- that two first hits on a key cannot both decide from a fresh state; a peek reads them in one statement (one
-- snapshot) and locks nothing. Spliced as text by cmake/embed_sql.cmake, with the parameters keys, hit and test_now
-- and fragments/call_locals.sql's locals; sets grace, states, db_now and t_now. Its twin in Redis is a script's
-- atomicity; the store contract (tests/core/store_contract_test.cpp) and postgres_store_test.cpp bind it.

-- A test clock stands still between steps while the database's clock runs: a grace minute keeps the sweep from
-- deleting a state the test clock still sees alive (decisions never read expires_at, only the state).
IF test_now IS NOT NULL THEN grace := 60000000; END IF;
IF hit THEN
  -- Creates the absent rows and locks them all, in key order. ON CONFLICT DO UPDATE locks a conflicting row even
  -- when its WHERE rejects the update: the row is locked, not rewritten (and a row deleted meanwhile by the sweep
  -- is inserted afresh: ON CONFLICT retries).
  INSERT INTO @schema@.@table@ AS r (key, state, expires_at)
    SELECT k, NULL, 0 FROM unnest(keys) k ORDER BY k
    ON CONFLICT (key) DO UPDATE SET expires_at = r.expires_at WHERE false;
END IF;
-- Every row in one statement: one snapshot for a peek.
SELECT array_agg(t.state::text ORDER BY u.i) INTO states
  FROM unnest(keys) WITH ORDINALITY u(k, i) LEFT JOIN @schema@.@table@ t ON t.key = u.k;
db_now := @schema@.rw1_clock();
t_now := coalesce(test_now, db_now);
