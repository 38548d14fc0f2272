-- fixed_window (core/src/algorithms/fixed_window.cpp). State: {count, start_us}; NULL for an absent key.
CREATE OR REPLACE FUNCTION @schema@.rw1_fixed_window(
    s bigint[], t_now bigint, lim bigint, period bigint, extra bigint, cost bigint, hit boolean,
    OUT state bigint[], OUT allowed boolean, OUT d_limit bigint, OUT remaining bigint, OUT reset_after bigint,
    OUT retry_after bigint, OUT used bigint, OUT expires_at bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  cnt bigint := coalesce(s[1], 0);
  start bigint := coalesce(s[2], 0);
  window_left bigint;
BEGIN
  IF cnt <= 0 OR t_now >= start + period THEN
    cnt := 0;
    start := t_now;
  END IF;
  d_limit := lim;
  allowed := cnt + cost <= lim;
  IF allowed AND hit THEN cnt := cnt + cost; END IF;
  window_left := start + period - t_now;
  used := cnt;
  remaining := lim - cnt;
  reset_after := CASE WHEN cnt > 0 THEN window_left ELSE 0 END;
  retry_after := CASE WHEN allowed THEN 0 ELSE window_left END;
  expires_at := CASE WHEN cnt > 0 THEN start + period ELSE t_now END;
  state := ARRAY[cnt, start];
END $$;
