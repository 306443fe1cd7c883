-- The slot resolution is fixed at creation: pending checks are stored on its grid.
CREATE OR REPLACE FUNCTION prescient.refuse_slot_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the slot resolution is fixed at creation (% s): pending checks are stored on its grid',
    OLD.slot_seconds;
END $$;

CREATE OR REPLACE TRIGGER settings_slot_is_fixed BEFORE UPDATE OF slot_seconds ON prescient.settings
  FOR EACH ROW WHEN (NEW.slot_seconds IS DISTINCT FROM OLD.slot_seconds)
  EXECUTE FUNCTION prescient.refuse_slot_change();
