package prescient_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v4"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
)

// The schema with no prescient binary: the package's bundle is the repository's, it makes a new database at
// the slot asked, applies nothing twice or to the database the binary made, and refuses a newer database.
func TestMigrateFromTheBundle(t *testing.T) {
	ctx := context.Background()
	// This file's folder in the repository (the build's GOPATH links to its parent), then the repository's bundle.
	_, self, _, _ := runtime.Caller(0)
	folder, err := filepath.EvalSymlinks(filepath.Dir(self))
	if err != nil {
		t.Fatal(err)
	}
	repository, err := os.ReadFile(filepath.Join(folder, "..", "..", "..", "..", "sql", "prescient-bundle.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if string(repository) != prescient.SchemaBundle() {
		t.Fatal("jobs/workers/go/prescient/prescient-bundle.sql differs: copy sql/prescient-bundle.sql")
	}
	name := fmt.Sprintf("prescient_go_schema_%d", os.Getpid())
	if _, err := db.Exec(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	defer db.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") //nolint:errcheck
	config := db.Config().ConnConfig.Copy()
	config.Database = name
	fresh, err := pgx.ConnectConfig(ctx, config)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(ctx)

	made, err := prescient.Migrate(ctx, fresh, 30)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range made {
		found = found || (a.Kind == "functions" && a.Name == "072_worker_protocol.sql")
	}
	if !found {
		t.Fatalf("the function files were not applied: %v", made)
	}
	var slot int
	if err := fresh.QueryRow(ctx, "SELECT slot_seconds FROM prescient.settings").Scan(&slot); err != nil || slot != 30 {
		t.Fatalf("slot %d, %v", slot, err)
	}
	if again, err := prescient.Migrate(ctx, fresh, 0); err != nil || len(again) != 0 {
		t.Fatalf("a second migrate applied %v (%v)", again, err)
	}
	binarys, err := db.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if applied, err := prescient.Migrate(ctx, binarys.Conn(), 0); err != nil || len(applied) != 0 {
		t.Fatalf("on the binary's database: %v (%v)", applied, err)
	}
	binarys.Release()
	if _, err := fresh.Exec(ctx, "INSERT INTO prescient.schema_migrations (version, name, checksum)"+
		" VALUES (9999, '9999_future.sql', 'x')"); err != nil {
		t.Fatal(err)
	}
	_, err = prescient.Migrate(ctx, fresh, 0)
	var refused *prescient.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(refused.Reason, "newer than this bundle knows") {
		t.Fatalf("a newer database: %v", err)
	}
}

// A worker class declared from Go with its policy; a runner's class is refused.
func TestDeclareWorkerClass(t *testing.T) {
	ctx := context.Background()
	job := fmt.Sprintf("ship_go_%d", os.Getpid())
	sixty := 60
	if status, err := prescient.DeclareWorkerClass(ctx, db, job, prescient.Policy{MaxChecks: &sixty,
		Backoff: 30 * time.Second}); err != nil || status != "added" {
		t.Fatalf("%q %v", status, err)
	}
	if status, err := prescient.DeclareWorkerClass(ctx, db, job, prescient.Policy{Timeout: 2 * time.Minute}); err != nil ||
		status != "known" {
		t.Fatalf("%q %v", status, err)
	}
	var runsIn string
	var maxChecks, backoff, timeout int
	if err := db.QueryRow(ctx, `SELECT runs_in, max_checks, backoff_seconds, timeout_seconds FROM prescient.job_class
	  WHERE job = $1`, job).Scan(&runsIn, &maxChecks, &backoff, &timeout); err != nil {
		t.Fatal(err)
	}
	if runsIn != "worker" || maxChecks != 60 || backoff != 30 || timeout != 120 {
		t.Fatalf("job_class row: %s %d %d %d", runsIn, maxChecks, backoff, timeout)
	}
	_, err := prescient.DeclareWorkerClass(ctx, db, "noop", prescient.Policy{MaxChecks: &sixty})
	var refused *prescient.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(refused.Reason, "is run by the runner") {
		t.Fatalf("a runner's class: %v", err)
	}
}
