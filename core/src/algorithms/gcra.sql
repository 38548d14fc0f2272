-- gcra (core/src/algorithms/gcra.cpp). State: {tat_us}; NULL for an absent key.
CREATE OR REPLACE FUNCTION @schema@.rw1_gcra(
    s bigint[], t_now bigint, lim bigint, period bigint, extra bigint, cost bigint, hit boolean,
    OUT state bigint[], OUT allowed boolean, OUT d_limit bigint, OUT remaining bigint, OUT reset_after bigint,
    OUT retry_after bigint, OUT used bigint, OUT expires_at bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  t bigint := (period + lim - 1) / lim;  -- µs per token, rounded up
  tau bigint := extra * t;
  tat bigint := greatest(coalesce(s[1], 0), t_now);
  nxt bigint := tat + cost * t;
BEGIN
  d_limit := extra;
  allowed := nxt - t_now <= tau;
  IF allowed AND hit THEN tat := nxt; END IF;
  remaining := greatest(0, (tau - (tat - t_now)) / t);  -- below 0 only past the burst (reservations)
  used := extra - remaining;
  reset_after := tat - t_now;
  retry_after := CASE WHEN allowed THEN 0 ELSE nxt - t_now - tau END;
  expires_at := tat;
  state := ARRAY[tat];
END $$;
