-- sliding_window (core/src/algorithms/sliding_window.cpp); extra is the bucket count N. State: {newest, count of
-- slot 0, ..., count of slot N}: the C++ ring of N + 1 slots, bucket k in slot k mod (N + 1); NULL for an absent key.
CREATE OR REPLACE FUNCTION @schema@.rw1_sliding_window(
    s bigint[], t_now bigint, lim bigint, period bigint, extra bigint, cost bigint, hit boolean,
    OUT state bigint[], OUT allowed boolean, OUT d_limit bigint, OUT remaining bigint, OUT reset_after bigint,
    OUT retry_after bigint, OUT used bigint, OUT expires_at bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  n bigint := extra;
  w bigint := period / n;
  slots bigint := n + 1;
  newest bigint;
  counts bigint[];
  c bigint;
  e bigint;
  full_sum bigint := 0;
  old bigint;
  weight bigint;
  estimate bigint;
  full2 bigint;
  old2 bigint;
  r bigint;
  q bigint;
  off bigint;
  newest_counted bigint;
  k bigint;  -- bucket indexes exceed a FOR loop's integer: WHILE loops over bigints
BEGIN
  IF s IS NOT NULL THEN
    newest := s[1];
    counts := s[2:slots + 1];
    t_now := greatest(t_now, newest * w);  -- a clock that went back: not before the state
  END IF;
  c := t_now / w - CASE WHEN t_now % w < 0 THEN 1 ELSE 0 END;  -- floor division
  e := t_now - c * w;
  IF s IS NULL THEN
    counts := array_fill(0::bigint, ARRAY[slots::int]);
    newest := c;
  ELSE
    k := newest + 1;
    WHILE k <= least(c, newest + slots) LOOP
      counts[((k % slots) + slots) % slots + 1] := 0;
      k := k + 1;
    END LOOP;
    newest := greatest(newest, c);
  END IF;
  -- Here newest = c: bucket k is held while c - slots < k <= c (rw1_ring_get).
  k := c - n + 1;
  WHILE k <= c LOOP
    full_sum := full_sum + @schema@.rw1_ring_get(counts, k, c, slots);
    k := k + 1;
  END LOOP;
  old := @schema@.rw1_ring_get(counts, c - n, c, slots);
  weight := 1000 - e * 1000 / w;
  estimate := full_sum + (old * weight + 999) / 1000;

  d_limit := lim;
  allowed := estimate + cost <= lim;
  retry_after := 0;
  IF allowed AND hit THEN
    counts[((c % slots) + slots) % slots + 1] := counts[((c % slots) + slots) % slots + 1] + cost;
    estimate := estimate + cost;
  END IF;
  IF NOT allowed THEN
    full2 := full_sum;
    k := c;  -- the C++ cc
    WHILE k <= c + n + 1 LOOP
      IF k > c THEN
        full2 := full2 + @schema@.rw1_ring_get(counts, k, c, slots) - @schema@.rw1_ring_get(counts, k - n, c, slots);
      END IF;
      old2 := @schema@.rw1_ring_get(counts, k - n, c, slots);
      r := lim - cost - full2;
      off := w;
      IF r >= 0 THEN
        off := 0;
        IF old2 > 0 THEN
          q := r * 1000 / old2;
          off := CASE WHEN q >= 1000 THEN 0 ELSE w - q * w / 1000 END;
        END IF;
      END IF;
      IF off < w THEN
        retry_after := greatest(k * w + off, t_now) - t_now;
        EXIT;
      END IF;
      k := k + 1;
    END LOOP;
  END IF;
  k := c;
  WHILE k >= c - n LOOP
    IF @schema@.rw1_ring_get(counts, k, c, slots) > 0 THEN
      newest_counted := k;
      EXIT;
    END IF;
    k := k - 1;
  END LOOP;
  used := estimate;
  remaining := greatest(0, lim - estimate);
  reset_after := CASE WHEN newest_counted IS NULL THEN 0 ELSE (newest_counted + n + 1) * w - t_now END;
  expires_at := t_now + reset_after;
  state := ARRAY[newest] || counts;
END $$;

-- Bucket k of a ring whose newest bucket is c: 0 outside c - slots < k <= c.
CREATE OR REPLACE FUNCTION @schema@.rw1_ring_get(counts bigint[], k bigint, c bigint, slots bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN k > c OR k <= c - slots THEN 0 ELSE counts[((k % slots) + slots) % slots + 1] END
$$;
