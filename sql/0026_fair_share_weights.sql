-- 0026: fair share may be weighted (docs/flow-control.md): a key value of weight 3 gets three checks of a
-- claim for each one of a value of weight 1. The weights are a JSON object on the limit; limit_set takes
-- one parameter more, so its old signature goes (IF EXISTS: a new database never had it).
ALTER TABLE prescient.flow_limit
  ADD COLUMN weights jsonb CHECK (weights IS NULL OR (fair_share AND jsonb_typeof(weights) = 'object'));
DROP FUNCTION IF EXISTS prescient.limit_set(text, text, integer, integer, integer, integer, text, text, text,
                                            timestamptz, boolean);
