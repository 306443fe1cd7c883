-- A daemon completed p_slot, claiming p_claimed checks in it: its row of prescient.runner_seen says so.
-- Runners unseen for a week are forgotten, so the table stays the size of the fleet.
CREATE OR REPLACE FUNCTION prescient.record_runner_seen(p_runner text, p_shard text, p_slot timestamptz,
                                                       p_claimed bigint, p_now timestamptz DEFAULT now())
  RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF p_runner IS NULL OR p_runner = '' OR p_shard IS NULL OR p_slot IS NULL OR p_claimed IS NULL
     OR p_claimed < 0 OR p_now IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = 'record_runner_seen needs a runner id, a shard, a slot, a claimed count >= 0 and a time';
  END IF;
  INSERT INTO prescient.runner_seen AS r (runner_id, shard, first_seen_at, last_slot, seen_at, claimed)
  VALUES (p_runner, p_shard, p_now, p_slot, p_now, p_claimed)
  ON CONFLICT (runner_id) DO UPDATE
    SET shard = EXCLUDED.shard, last_slot = EXCLUDED.last_slot, seen_at = EXCLUDED.seen_at, claimed = EXCLUDED.claimed;
  DELETE FROM prescient.runner_seen WHERE seen_at < p_now - interval '7 days';
END $$;
REVOKE EXECUTE ON FUNCTION prescient.record_runner_seen(text, text, timestamptz, bigint, timestamptz) FROM PUBLIC;
