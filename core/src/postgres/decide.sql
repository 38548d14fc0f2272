-- combine_decisions (decide_all.cpp), for decide and refund: `results` holds 6 integers per policy {allowed, limit,
-- remaining, reset_after, retry_after, used}; among the policies that agree with the outcome, the largest
-- retry_after, then the lowest remaining, then the first. Returns the chosen policy's 6 integers and its index from 0.
CREATE OR REPLACE FUNCTION @schema@.rw1_combine(results bigint[], all_allowed boolean)
RETURNS bigint[] LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  chosen int;
  best_retry bigint;
  best_remaining bigint;
BEGIN
  FOR i IN 1 .. array_length(results, 1) / 6 LOOP
    IF (results[6 * i - 5] = 1) = all_allowed AND (chosen IS NULL OR results[6 * i - 1] > best_retry OR
        (results[6 * i - 1] = best_retry AND results[6 * i - 3] < best_remaining)) THEN
      chosen := i;
      best_retry := results[6 * i - 1];
      best_remaining := results[6 * i - 3];
    END IF;
  END LOOP;
  RETURN results[6 * chosen - 5 : 6 * chosen] || (chosen - 1)::bigint;
END $$;

-- One call on every policy of one key, atomically: the twin of decide_all.cpp (and decide_all.lua).
-- keys[i] is the storage key of policy i (algos[i], lims[i], periods[i], extras[i]: Policy::option_value); test_now
-- is the test clock's time (µs) or NULL for the database's clock. Returns {allowed (1/0), limit, remaining,
-- reset_after, retry_after, used, policy_index}.
-- A hit locks the call's rows, in key order (no deadlock between calls that share keys), creating the absent ones
-- so that two first hits on a key cannot both decide from a fresh state; a peek reads them in one statement (one
-- snapshot) and locks nothing. Only an allowed hit writes. The store's sessions use generic plans
-- (plan_cache_mode): the statements here are the same for every call.
CREATE OR REPLACE FUNCTION @schema@.@table@_decide(
    keys bytea[], algos text[], lims bigint[], periods bigint[], extras bigint[], cost bigint, hit boolean,
    test_now bigint)
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
  n int := array_length(keys, 1);
  states text[];
  cur_state bigint[];
  t_now bigint;
  db_now bigint;
  grace bigint := 0;
  d record;
  all_allowed boolean := true;
  out_states text[];
  results bigint[] := '{}';
BEGIN
  -- A test clock stands still between steps while the database's clock runs: a grace minute keeps the sweep from
  -- deleting a state the test clock still sees alive (decisions never read expires_at, only the state).
  IF test_now IS NOT NULL THEN grace := 60000000; END IF;

  IF n = 1 THEN
    -- One policy decides alone: a hit evaluates once. A hit on an existing row locks and reads it in one statement.
    IF hit THEN
      SELECT t.state INTO cur_state FROM @schema@.@table@ t WHERE t.key = keys[1] FOR UPDATE;
    END IF;
    IF NOT hit OR NOT FOUND THEN
      IF hit THEN
        INSERT INTO @schema@.@table@ AS r (key, state, expires_at) VALUES (keys[1], NULL, 0)
          ON CONFLICT (key) DO UPDATE SET expires_at = r.expires_at WHERE false;
      END IF;
      SELECT t.state INTO cur_state FROM @schema@.@table@ t WHERE t.key = keys[1];
    END IF;
    db_now := @schema@.rw1_clock();
    t_now := coalesce(test_now, db_now);
    SELECT * INTO d FROM @schema@.rw1_evaluate(algos[1], cur_state, t_now, lims[1], periods[1], extras[1], cost, hit);
    IF hit AND d.allowed THEN
      UPDATE @schema@.@table@ SET state = d.state, expires_at = db_now + grace + (d.expires_at - t_now)
        WHERE key = keys[1];
    END IF;
    RETURN ARRAY[CASE WHEN d.allowed THEN 1 ELSE 0 END, d.d_limit, d.remaining, d.reset_after, d.retry_after, d.used, 0];
  END IF;

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

  -- Several: peek every policy; a hit charges them all (from their peeked states) only if every one allows it.
  out_states := states;
  FOR i IN 1 .. n LOOP
    SELECT * INTO d FROM @schema@.rw1_evaluate(algos[i], states[i]::bigint[], t_now, lims[i], periods[i], extras[i], cost, false);
    out_states[i] := d.state::text;
    results := results || ARRAY[CASE WHEN d.allowed THEN 1 ELSE 0 END, d.d_limit, d.remaining, d.reset_after,
                                d.retry_after, d.used];
    all_allowed := all_allowed AND d.allowed;
  END LOOP;
  IF hit AND all_allowed THEN
    results := '{}';
    FOR i IN 1 .. n LOOP
      SELECT * INTO d FROM @schema@.rw1_evaluate(algos[i], out_states[i]::bigint[], t_now, lims[i], periods[i], extras[i], cost, true);
      results := results || ARRAY[1, d.d_limit, d.remaining, d.reset_after, d.retry_after, d.used];
      UPDATE @schema@.@table@ SET state = d.state, expires_at = db_now + grace + (d.expires_at - t_now)
        WHERE key = keys[i];
    END LOOP;
  END IF;
  RETURN @schema@.rw1_combine(results, all_allowed);
END $$;

-- The background sweep: deletes the expired rows among those of blocks [from_block, from_block + blocks) (a TID
-- range scan: no index on expires_at, which would make every update non-HOT), skipping rows a call holds locked.
-- Returns the rows deleted and the block to start the next batch from (0 after the table's last block; from_block
-- again when another process holds the sweep: the caller then waits for its next interval).
CREATE OR REPLACE FUNCTION @schema@.@table@_sweep(from_block bigint, blocks bigint, OUT deleted bigint,
                                                  OUT next_block bigint)
LANGUAGE plpgsql AS $$
DECLARE
  db_now bigint := @schema@.rw1_clock();
  lo tid := format('(%s,0)', from_block)::tid;
  hi tid := format('(%s,0)', from_block + blocks)::tid;
  total bigint := pg_relation_size('@schema@.@table@'::regclass) / current_setting('block_size')::bigint;
BEGIN
  -- One sweeper at a time per table, whichever process: the others skip this batch.
  IF NOT pg_try_advisory_xact_lock(7418412635419208502 # hashtext('@schema@.@table@')::bigint) THEN
    deleted := 0;
    next_block := from_block;
    RETURN;
  END IF;
  DELETE FROM @schema@.@table@ WHERE ctid = ANY(ARRAY(
    SELECT ctid FROM @schema@.@table@ WHERE ctid >= lo AND ctid < hi AND expires_at < db_now
    FOR UPDATE SKIP LOCKED));
  GET DIAGNOSTICS deleted = ROW_COUNT;
  next_block := CASE WHEN from_block + blocks >= total THEN 0 ELSE from_block + blocks END;
END $$;

-- The reset log of the hybrid modes (docs/hybrid.md): a reset deletes the key's rows and appends the user key to
-- <table>_resets under the next n, in one transaction. Appends are serialised (an advisory lock held to commit), so
-- n follows commit order and a reader that has read up to n has seen every reset before it. About the last 10,000
-- entries are kept.
CREATE OR REPLACE FUNCTION @schema@.@table@_reset(keys bytea[], tag bytea) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  last bigint;
BEGIN
  DELETE FROM @schema@.@table@ WHERE key = ANY(keys);
  PERFORM pg_advisory_xact_lock(7418412635419208503 # hashtext('@schema@.@table@')::bigint);
  SELECT coalesce(max(n), 0) INTO last FROM @schema@.@table@_resets;
  INSERT INTO @schema@.@table@_resets VALUES (last + 1, tag);
  DELETE FROM @schema@.@table@_resets WHERE n <= last + 1 - 10000;
END $$;

-- What follows `after` in the reset log (a negative `after`: nothing, only where the log ends): the new cursor,
-- whether entries were lost (trimmed, or the log restarted), the server's start time (an UNLOGGED table is emptied
-- by a crash: a new epoch tells readers to forget everything) and the user keys, hex-encoded and comma-separated.
CREATE OR REPLACE FUNCTION @schema@.@table@_read_resets(after bigint, batch integer, OUT cursor bigint,
                                                        OUT gap boolean, OUT epoch text, OUT tags text)
LANGUAGE plpgsql STABLE AS $$
DECLARE
  last bigint;
  first bigint;
BEGIN
  epoch := pg_postmaster_start_time()::text;
  gap := false;
  tags := '';
  SELECT coalesce(max(n), 0) INTO last FROM @schema@.@table@_resets;
  IF after < 0 OR last <= after THEN
    cursor := last;
    gap := last < after;
    RETURN;
  END IF;
  SELECT min(n), max(n), string_agg(encode(tag, 'hex'), ',' ORDER BY n) INTO first, cursor, tags
    FROM (SELECT n, tag FROM @schema@.@table@_resets WHERE n > after ORDER BY n LIMIT batch) AS next;
  gap := first <> after + 1;
END $$;

-- A reservation (decide_all.cpp, reserve_all; gcra and token_bucket): the earliest instant, no later than t_now +
-- max_wait, at which every policy allows a hit, and the hit charged at that instant. The rows are locked as a hit's.
-- Returns decide's 7 integers (durations from now), then the wait and the ticket (the one policy's state after the
-- charge: its expiry; 0 for several policies), or, when the wait would exceed max_wait, the denial decide gives a
-- hit, charging nothing.
CREATE OR REPLACE FUNCTION @schema@.@table@_reserve(
    keys bytea[], algos text[], lims bigint[], periods bigint[], extras bigint[], cost bigint, max_wait bigint,
    test_now bigint)
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
  n int := array_length(keys, 1);
  states text[];
  t_now bigint;
  db_now bigint;
  grace bigint := 0;
  d record;
  wait bigint := 0;
  chosen int;
  best bigint;
  results bigint[] := '{}';
BEGIN
  IF test_now IS NOT NULL THEN grace := 60000000; END IF;  -- decide's grace minute
  INSERT INTO @schema@.@table@ AS r (key, state, expires_at)
    SELECT k, NULL, 0 FROM unnest(keys) k ORDER BY k
    ON CONFLICT (key) DO UPDATE SET expires_at = r.expires_at WHERE false;
  SELECT array_agg(t.state::text ORDER BY u.i) INTO states
    FROM unnest(keys) WITH ORDINALITY u(k, i) LEFT JOIN @schema@.@table@ t ON t.key = u.k;
  db_now := @schema@.rw1_clock();
  t_now := coalesce(test_now, db_now);
  FOR i IN 1 .. n LOOP
    SELECT * INTO d FROM @schema@.rw1_evaluate(algos[i], states[i]::bigint[], t_now, lims[i], periods[i], extras[i], cost, false);
    wait := greatest(wait, d.retry_after);
  END LOOP;
  IF wait > max_wait THEN
    RETURN @schema@.@table@_decide(keys, algos, lims, periods, extras, cost, false, test_now);
  END IF;
  FOR i IN 1 .. n LOOP
    SELECT * INTO d FROM @schema@.rw1_evaluate(algos[i], states[i]::bigint[], t_now + wait, lims[i], periods[i], extras[i], cost, true);
    UPDATE @schema@.@table@ SET state = d.state, expires_at = db_now + grace + (d.expires_at - t_now) WHERE key = keys[i];
    -- All allow at t_now + wait: report the lowest remaining, the first on a tie (combine_decisions).
    IF chosen IS NULL OR d.remaining < best THEN
      chosen := i;
      best := d.remaining;
      results := ARRAY[1, d.d_limit, d.remaining, d.reset_after + wait, 0, d.used, i - 1, wait,
                       CASE WHEN n = 1 THEN d.expires_at ELSE 0 END];
    END IF;
  END LOOP;
  RETURN results;
END $$;

-- A reservation given back (decide_all.cpp, cancel_one; one policy): the cost returned when the state is still what
-- the reservation left (`ticket`), i.e. nothing was charged after it. Returns {given (1/0), limit, remaining,
-- reset_after, retry_after, used}, the rest as a peek's.
CREATE OR REPLACE FUNCTION @schema@.@table@_cancel(
    k bytea, algo text, lim bigint, period bigint, extra bigint, cost bigint, ticket bigint, test_now bigint)
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
  s bigint[];
  t bigint := (period + lim - 1) / lim;
  t_now bigint;
  db_now bigint;
  grace bigint := 0;
  given boolean := false;
  d record;
BEGIN
  IF test_now IS NOT NULL THEN grace := 60000000; END IF;
  SELECT r.state INTO s FROM @schema@.@table@ r WHERE r.key = k FOR UPDATE;
  db_now := @schema@.rw1_clock();
  t_now := coalesce(test_now, db_now);
  IF ticket <= t_now THEN
    NULL;  -- past its ticket, the state has given everything back by itself
  ELSIF s IS NOT NULL AND algo = 'gcra' AND s[1] = ticket THEN
    given := true;
    s[1] := s[1] - cost * t;
  ELSIF s IS NOT NULL AND algo = 'token_bucket' AND s[2] + extra * t - s[1] = ticket THEN
    given := true;
    s[1] := s[1] + cost * t;  -- the full-at instant less the cost
  END IF;
  SELECT * INTO d FROM @schema@.rw1_evaluate(algo, s, t_now, lim, period, extra, cost, false);
  IF given THEN
    UPDATE @schema@.@table@ SET state = d.state, expires_at = db_now + grace + (d.expires_at - t_now) WHERE key = k;
  END IF;
  RETURN ARRAY[CASE WHEN given THEN 1 ELSE 0 END, d.d_limit, d.remaining, d.reset_after, d.retry_after, d.used];
END $$;

-- What a refund gives back (the twin of the Mode::refund branch of each core/src/algorithms/<algorithm>.cpp): up to
-- `cost` of the newest charges, from a state rw1_evaluate has just normalised at t_now (its OUT state).
CREATE OR REPLACE FUNCTION @schema@.rw1_take_back(
    algo text, s bigint[], t_now bigint, lim bigint, period bigint, extra bigint, cost bigint)
RETURNS bigint[] LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  t bigint := (period + lim - 1) / lim;
  left_over bigint := cost;
  taken bigint;
  len int;
  k bigint;
  slot int;
BEGIN
  IF algo = 'fixed_window' THEN  -- {count, start}
    s[1] := greatest(0, s[1] - cost);
  ELSIF algo = 'gcra' THEN  -- {tat}
    s[1] := greatest(t_now, s[1] - cost * t);
  ELSIF algo = 'token_bucket' THEN  -- {credit, last}
    s[1] := least(extra * t, s[1] + cost * t);
  ELSIF algo = 'sliding_log' THEN  -- {sum, at_1, cost_1, ...}: from the newest entry
    len := array_length(s, 1);
    WHILE left_over > 0 AND len > 1 LOOP
      taken := least(left_over, s[len]);
      s[len] := s[len] - taken;
      s[1] := s[1] - taken;
      left_over := left_over - taken;
      IF s[len] = 0 THEN
        s := s[1:len - 2];
        len := len - 2;
      END IF;
    END LOOP;
  ELSIF algo = 'sliding_window' THEN  -- {newest, slot 0 .. slot N}: from the newest bucket back to newest - N
    k := s[1];
    WHILE left_over > 0 AND k >= s[1] - extra LOOP
      slot := (((k % (extra + 1)) + extra + 1) % (extra + 1))::int + 2;
      taken := least(left_over, s[slot]);
      s[slot] := s[slot] - taken;
      left_over := left_over - taken;
      k := k - 1;
    END LOOP;
  END IF;
  RETURN s;
END $$;

-- A refund (decide_all.cpp, Mode::refund): every policy of the call gives back up to `cost` of its newest charges,
-- then decides as a peek; the rows are locked as a hit's. An absent row has nothing to give back. Returns decide's 7
-- integers.
CREATE OR REPLACE FUNCTION @schema@.@table@_refund(
    keys bytea[], algos text[], lims bigint[], periods bigint[], extras bigint[], cost bigint, test_now bigint)
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
  n int := array_length(keys, 1);
  cur bigint[];
  t_now bigint;
  db_now bigint;
  grace bigint := 0;
  d record;
  all_allowed boolean := true;
  results bigint[] := '{}';
BEGIN
  IF test_now IS NOT NULL THEN grace := 60000000; END IF;  -- decide's grace minute
  PERFORM 1 FROM @schema@.@table@ t WHERE t.key = ANY(keys) ORDER BY t.key FOR UPDATE;
  db_now := @schema@.rw1_clock();
  t_now := coalesce(test_now, db_now);
  FOR i IN 1 .. n LOOP
    cur := (SELECT t.state FROM @schema@.@table@ t WHERE t.key = keys[i]);
    SELECT * INTO d FROM @schema@.rw1_evaluate(algos[i], cur, t_now, lims[i], periods[i], extras[i], cost, false);
    IF cur IS NOT NULL THEN  -- a row without a state is a key never charged
      SELECT * INTO d FROM @schema@.rw1_evaluate(algos[i],
          @schema@.rw1_take_back(algos[i], d.state, t_now, lims[i], periods[i], extras[i], cost),
          t_now, lims[i], periods[i], extras[i], cost, false);
      UPDATE @schema@.@table@ SET state = d.state, expires_at = db_now + grace + (d.expires_at - t_now)
        WHERE key = keys[i];
    END IF;
    results := results || ARRAY[CASE WHEN d.allowed THEN 1 ELSE 0 END, d.d_limit, d.remaining, d.reset_after,
                                d.retry_after, d.used];
    all_allowed := all_allowed AND d.allowed;
  END LOOP;
  RETURN @schema@.rw1_combine(results, all_allowed);
END $$;
