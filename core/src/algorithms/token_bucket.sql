-- token_bucket (core/src/algorithms/token_bucket.cpp). State: {credit_us, last_us}; NULL for an absent key (a full
-- bucket: the C++ state's `fresh`).
CREATE OR REPLACE FUNCTION @schema@.rw1_token_bucket(
    s bigint[], t_now bigint, lim bigint, period bigint, extra bigint, cost bigint, hit boolean,
    OUT state bigint[], OUT allowed boolean, OUT d_limit bigint, OUT remaining bigint, OUT reset_after bigint,
    OUT retry_after bigint, OUT used bigint, OUT expires_at bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  t bigint := (period + lim - 1) / lim;
  cap bigint := extra * t;
  credit bigint := coalesce(s[1], cap);
  last bigint := coalesce(s[2], t_now);
  need bigint := cost * t;
BEGIN
  -- The state is the full-at instant last + cap - credit (token_bucket.cpp): a call before `last` (a reservation
  -- charged a later slot) sees the credit of its own time.
  credit := least(cap, credit + (t_now - last));
  last := t_now;
  d_limit := extra;
  allowed := credit >= need;
  IF allowed AND hit THEN credit := credit - need; END IF;
  remaining := greatest(0, credit / t);
  used := extra - remaining;
  reset_after := cap - credit;
  retry_after := CASE WHEN allowed THEN 0 ELSE need - credit END;
  expires_at := t_now + reset_after;
  state := ARRAY[credit, last];
END $$;
