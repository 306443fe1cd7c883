package prescient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
)

// The conformance driver build.sh built, run as the harness runs it: each payload answer, then SIGTERM.
func TestConformanceDriver(t *testing.T) {
	t.Parallel()
	buildDir := os.Getenv("PRESCIENT_WORKERS_BUILD_DIR")
	if buildDir == "" {
		t.Fatal("PRESCIENT_WORKERS_BUILD_DIR is not set: the driver is looked for in $PRESCIENT_WORKERS_BUILD_DIR/go/bin")
	}
	ctx := context.Background()
	if _, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS conformance_ledger (check_id bigint, worker text,
	  language text, due_at timestamptz, check_count integer)`); err != nil {
		t.Fatal(err)
	}
	class := newClass(t, "driver")
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	ids := map[string]int64{}
	for key, payload := range map[string]string{
		"done":   `{}`,
		"next":   `{"answer": "next", "next_seconds": 3600}`,
		"at":     `{"answer": "at", "at": "` + at.Format(time.RFC3339) + `"}`,
		"error":  `{"answer": "error", "error": "nope"}`,
		"result": `{"answer": "result", "result": {"r": 1}}`,
		"slow":   `{"sleep_ms": 300}`,
	} {
		ids[key] = schedule(t, &prescient.Client{}, prescient.ScheduleRequest{Job: class, EntityKey: key,
			Payload: json.RawMessage(payload)})
	}

	var stderr bytes.Buffer
	driver := exec.Command(filepath.Join(buildDir, "go", "bin", "conformance-driver"), "work", "--name", "gd",
		"--classes", class, "--concurrency", "4", "--batch", "50", "--lease-seconds", "2")
	driver.Stderr = &stderr
	if err := driver.Start(); err != nil {
		t.Fatal(err)
	}
	defer driver.Process.Kill()
	settled := func() bool {
		var n int
		err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM prescient.job_history WHERE job = $1)
		  + (SELECT count(*) FROM prescient.future_job WHERE job = $1 AND (check_count > 0 OR attempts > 0))`, class).Scan(&n)
		return err == nil && n == len(ids)
	}
	waitFor(t, 6*time.Second, "the driver settled every check", settled)
	if err := driver.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- driver.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("after SIGTERM the driver exited with %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the driver did not stop 5 s after SIGTERM; stderr:\n%s", stderr.String())
	}
	t.Logf("driver stderr:\n%s", stderr.String())

	var ledgered int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM conformance_ledger l JOIN prescient.job_history h ON h.id = l.check_id
	  WHERE l.worker = 'gd' AND l.language = 'go' AND l.check_count = 0 AND h.job = $1`, class).Scan(&ledgered); err != nil {
		t.Fatal(err)
	}
	if ledgered != 3 { // done, result, slow are in the history; each ran once
		t.Fatalf("ledger rows of the finished checks: %d, want 3", ledgered)
	}
	for _, key := range []string{"done", "slow"} {
		if h, ok := history(t, ids[key]); !ok || h.Outcome != "done" || h.Result != nil {
			t.Fatalf("%s: %+v (in history %v)", key, h, ok)
		}
	}
	if h, ok := history(t, ids["result"]); !ok || h.Outcome != "done" || h.Result == nil || *h.Result != `{"r": 1}` {
		t.Fatalf("result: %+v (in history %v)", h, ok)
	}
	var due time.Time
	if err := db.QueryRow(ctx, `SELECT due_at FROM conformance_ledger WHERE check_id = $1`, ids["next"]).Scan(&due); err != nil {
		t.Fatal(err)
	}
	if p, ok := pending(t, ids["next"]); !ok || !p.NextCheckAt.Equal(due.Add(time.Hour)) || p.CheckCount != 1 {
		t.Fatalf("next: want pending an hour after its due time %s, got %+v (pending %v)", due, p, ok)
	}
	if p, ok := pending(t, ids["at"]); !ok || !p.NextCheckAt.Equal(at) {
		t.Fatalf("at: want pending at %s, got %+v (pending %v)", at, p, ok)
	}
	// Retried after the class's backoff (a second or so): the retry may have run before the SIGTERM.
	if p, ok := pending(t, ids["error"]); !ok || p.Attempts < 1 || p.LastError == nil || *p.LastError != "nope" {
		t.Fatalf("error: want retried with its text, got %+v (pending %v)", p, ok)
	}
	if !strings.Contains(stderr.String(), "check ") {
		t.Fatalf("the driver logged no line per check:\n%s", stderr.String())
	}
}
