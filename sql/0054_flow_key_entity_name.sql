-- 0054: a flow limit's key for the entity is called entity_name, as the column it reads is (it was
-- `entity`, which the rest of prescient never calls a column or a field). Limits stored with the old word
-- are rewritten, and the table takes the new word only; limit_set still takes `entity` for one release
-- and stores `entity_name` (docs/flow-control.md, "Keys").
ALTER TABLE prescient.flow_limit DROP CONSTRAINT flow_limit_key_check;
UPDATE prescient.flow_limit SET key = 'entity_name' WHERE key = 'entity';
ALTER TABLE prescient.flow_limit ADD CONSTRAINT flow_limit_key_check
  CHECK (key IN ('job', 'entity_name', 'http_target')
         OR (key LIKE 'payload.%' AND octet_length(key) BETWEEN 9 AND 208));
