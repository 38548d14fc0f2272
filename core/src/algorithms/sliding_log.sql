-- sliding_log (core/src/algorithms/sliding_log.cpp). State: {sum, at_1, cost_1, at_2, cost_2, ...}: the running
-- total, then the allowed hits oldest first (hits at one instant are one entry); NULL for an absent key.
CREATE OR REPLACE FUNCTION @schema@.rw1_sliding_log(
    s bigint[], t_now bigint, lim bigint, period bigint, extra bigint, cost bigint, hit boolean,
    OUT state bigint[], OUT allowed boolean, OUT d_limit bigint, OUT remaining bigint, OUT reset_after bigint,
    OUT retry_after bigint, OUT used bigint, OUT expires_at bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  total bigint := coalesce(s[1], 0);
  len int := coalesce(array_length(s, 1), 1);
  head int := 2;
  e bigint[];
  elen int;
  freed bigint := 0;
BEGIN
  -- Drop the expired entries from the head, their costs from the total.
  WHILE head < len AND s[head] <= t_now - period LOOP
    total := total - s[head + 1];
    head := head + 2;
  END LOOP;
  IF head >= len THEN
    e := '{}';
    total := 0;
  ELSE
    e := s[head:len];
  END IF;
  elen := coalesce(array_length(e, 1), 0);
  d_limit := lim;
  allowed := total + cost <= lim;
  retry_after := 0;
  IF allowed AND hit THEN
    IF elen > 0 AND e[elen - 1] = t_now THEN
      e[elen] := e[elen] + cost;  -- same instant: one entry
    ELSE
      e := e || ARRAY[t_now, cost];
      elen := elen + 2;
    END IF;
    total := total + cost;
  END IF;
  IF NOT allowed THEN
    -- The first entry whose expiry frees enough of the quota.
    FOR i IN 1 .. elen BY 2 LOOP
      freed := freed + e[i + 1];
      IF total - freed + cost <= lim THEN
        retry_after := e[i] + period - t_now;
        EXIT;
      END IF;
    END LOOP;
  END IF;
  used := total;
  remaining := lim - total;
  reset_after := CASE WHEN elen = 0 THEN 0 ELSE e[elen - 1] + period - t_now END;
  expires_at := t_now + reset_after;
  state := ARRAY[total] || e;
END $$;
