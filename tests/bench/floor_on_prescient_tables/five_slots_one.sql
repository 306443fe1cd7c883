-- One slot of five_slots.sql: fires slot :slot (minutes after the first), prints its seconds, counts on.
SELECT clock_timestamp() AS started \gset
CALL pg_temp.fire_slot(timestamptz '2026-01-01T00:00:00Z' + :slot * interval '1 minute');
SELECT round(extract(epoch FROM clock_timestamp() - :'started'::timestamptz), 3);
SELECT :slot + 1 AS slot \gset
