#include "prescient/migrations.hpp"

#include <string>

#include "core/fnv.hpp"
#include "db/released_checksums.hpp"

namespace prescient {

namespace {

// What the bundle's function does, in SQL: what migrate() does in C++ (db/migrator.cpp), with the same
// bookkeeping (prescient.schema_migrations, prescient.schema_functions, the checksums), so that either may
// upgrade a database the other made. It reads the files from pg_temp.prescient_bundle_files() and the
// released checksums from pg_temp.prescient_released(), written before it; @LATEST@ is the newest version.
constexpr std::string_view kBundleFunction = R"sql(
CREATE OR REPLACE FUNCTION pg_temp.prescient_migrate(p_slot_seconds integer DEFAULT NULL)
  RETURNS TABLE (kind text, name text) LANGUAGE plpgsql AS $prescient_bundle$
#variable_conflict use_column
DECLARE
  v_latest constant integer := @LATEST@;
  v_file record;
  v_newest record;
  v_stored_slot integer;
BEGIN
  -- Concurrent migrates (a bundle's, a binary's) wait for each other, in the caller's one transaction.
  PERFORM pg_advisory_xact_lock(7375828459127746561);
  CREATE SCHEMA IF NOT EXISTS prescient;
  CREATE TABLE IF NOT EXISTS prescient.schema_migrations (
    version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now());
  SELECT m.version, m.name INTO v_newest FROM prescient.schema_migrations m ORDER BY m.version DESC LIMIT 1;
  IF v_newest.version > v_latest THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('the database has migration %s, newer than this '
      'bundle knows (up to %s): use the newer bundle, or prescient migrate of that release', v_newest.name, v_latest);
  END IF;
  FOR v_file IN SELECT f.* FROM pg_temp.prescient_bundle_files() f
                  JOIN prescient.schema_migrations m ON m.version = f.version
                 WHERE f.is_migration AND m.checksum <> f.checksum
                   AND (m.version, m.checksum) NOT IN (SELECT r.version, r.checksum FROM pg_temp.prescient_released() r)
  LOOP
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('migration %s differs from the one applied to this '
      'database (migrations are forward-only: never edit an applied file, add a new one)', v_file.name);
  END LOOP;
  IF EXISTS (SELECT FROM prescient.schema_migrations m WHERE m.version = 1) THEN
    SELECT s.slot_seconds INTO v_stored_slot FROM prescient.settings s;
    IF p_slot_seconds IS NOT NULL AND p_slot_seconds <> v_stored_slot THEN
      RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('the slot of %s seconds does not match this '
        'database''s slot resolution of %s seconds: it is fixed at creation because pending checks are stored on '
        'its grid', p_slot_seconds, v_stored_slot);
    END IF;
  END IF;
  FOR v_file IN SELECT f.* FROM pg_temp.prescient_bundle_files() f
                 WHERE f.is_migration
                   AND NOT EXISTS (SELECT FROM prescient.schema_migrations m WHERE m.version = f.version)
                 ORDER BY f.version
  LOOP
    PERFORM set_config('prescient.slot_seconds', coalesce(p_slot_seconds, 60)::text, true);
    EXECUTE v_file.sql;
    INSERT INTO prescient.schema_migrations (version, name, checksum)
      VALUES (v_file.version, v_file.name, v_file.checksum);
    kind := 'migration';
    name := v_file.name;
    RETURN NEXT;
  END LOOP;
  CREATE TABLE IF NOT EXISTS prescient.schema_functions (
    name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
  FOR v_file IN SELECT f.* FROM pg_temp.prescient_bundle_files() f
                 WHERE NOT f.is_migration
                   AND NOT EXISTS (SELECT FROM prescient.schema_functions a
                                    WHERE a.name = f.name AND a.checksum = f.checksum)
                 ORDER BY f.version
  LOOP
    EXECUTE v_file.sql;
    INSERT INTO prescient.schema_functions AS a (name, checksum) VALUES (v_file.name, v_file.checksum)
      ON CONFLICT ON CONSTRAINT schema_functions_pkey
      DO UPDATE SET checksum = excluded.checksum, applied_at = now();
    kind := 'functions';
    name := v_file.name;
    RETURN NEXT;
  END LOOP;
  PERFORM prescient.regrant_roles();
  PERFORM prescient.ensure_history_partitions(
    greatest(least(coalesce((SELECT min(h.finished_at) FROM prescient.job_history_default h), now()), now()),
             now() - interval '99 years'),
    now() + interval '92 days');
END $prescient_bundle$;
)sql";

// The dollar-quoted literal of a file's text, under a tag of its own that the text cannot hold.
std::string quoted(std::string_view text, const std::string& tag) {
  const std::string mark = "$" + tag + "$";
  return mark + std::string(text) + mark;
}

std::string file_rows() {
  std::string rows;
  const auto add = [&](const Migration& m, bool is_migration, const char* kind) {
    rows += rows.empty() ? "    " : ",\n    ";
    rows += "(" + std::to_string(m.version) + ", '" + std::string(m.name) + "', " +
            (is_migration ? "true" : "false") + ", '" + core::fnv1a_hex(m.sql) + "',\n     " +
            quoted(m.sql, std::string("prescient_") + kind + "_" + std::to_string(m.version)) + ")";
  };
  for (const Migration& m : embedded_migrations()) add(m, true, "migration");
  for (const Migration& f : embedded_functions()) add(f, false, "functions");
  return rows;
}

// The released checksums (db/released_checksums.hpp) as rows of (version, checksum).
std::string released_rows() {
  std::string rows;
  for (const auto& [version, checksum] : db::checksums_released_before_functions_moved()) {
    rows += (rows.empty() ? "    (" : ",\n    (") + std::to_string(version) + ", '" + checksum + "')";
  }
  return rows;
}

std::string replaced(std::string text, std::string_view marker, const std::string& value) {
  text.replace(text.find(marker), marker.size(), value);
  return text;
}

}  // namespace

std::string schema_bundle() {
  std::string bundle =
      "-- The prescient schema as one SQL file: every migration and function file of sql/ up to migration " +
      std::to_string(latest_known_migration()) +
      ",\n"
      "-- generated by `prescient migrate --print-bundle` (scripts/schema-bundle.sh writes it and the clients'\n"
      "-- copies; tests keep them identical). A client\n"
      "-- with no prescient binary creates or upgrades the schema with it, in one transaction:\n"
      "--   BEGIN; <this file>; SELECT * FROM pg_temp.prescient_migrate(SLOT_SECONDS or NULL); COMMIT;\n"
      "-- It applies what `prescient migrate` applies, with the same bookkeeping, so either may upgrade after\n"
      "-- the other; a database newer than the bundle is refused (PR400) before anything is written. A session\n"
      "-- may apply it again: its functions are pg_temp's, replaced each time.\n";
  bundle += "CREATE OR REPLACE FUNCTION pg_temp.prescient_bundle_files()\n"
            "  RETURNS TABLE (version integer, name text, is_migration boolean, checksum text, sql text)\n"
            "  LANGUAGE sql IMMUTABLE AS $prescient_files$\n  VALUES\n" +
            file_rows() + "\n$prescient_files$;\n";
  bundle += "CREATE OR REPLACE FUNCTION pg_temp.prescient_released() RETURNS TABLE (version integer, checksum text)\n"
            "  LANGUAGE sql IMMUTABLE AS $prescient_released$\n  VALUES\n" +
            released_rows() + "\n$prescient_released$;\n";
  bundle += replaced(std::string(kBundleFunction), "@LATEST@", std::to_string(latest_known_migration()));
  return bundle;
}

}  // namespace prescient
