package prescient_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
)

// db is the fresh, migrated database jobs/workers/with-database.sh made for this run (the tests never mock it).
var db *pgxpool.Pool

func TestMain(m *testing.M) {
	url := os.Getenv("PRESCIENT_DATABASE_URL")
	if url == "" {
		fmt.Fprintln(os.Stderr, "PRESCIENT_DATABASE_URL is not set: run the tests through jobs/workers/with-database.sh")
		os.Exit(2)
	}
	var err error
	if db, err = pgxpool.Connect(context.Background(), url); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	db.Close()
	os.Exit(code)
}

var classSeq int64

// newClass declares a worker class of the test's own, so tests sharing the database never see each other's checks.
func newClass(t *testing.T, prefix string) string {
	t.Helper()
	class := fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), atomic.AddInt64(&classSeq, 1))
	if _, err := db.Exec(context.Background(), `SELECT prescient.job_class_add($1, true)`, class); err != nil {
		t.Fatalf("job_class_add %s: %v", class, err)
	}
	return class
}

// testLogger writes the worker's lines into the test's log (shown with -v or on failure).
func testLogger(t *testing.T) prescient.Logger {
	return prescient.LogLogger(log.New(testWriter{t}, "", log.Lmicroseconds))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// callerTraceparent is the W3C Trace Context example: a caller's trace, its span as the parent id.
const callerTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// schedule enqueues one check on the pool (autocommitted).
func schedule(t *testing.T, client *prescient.Client, r prescient.ScheduleRequest) int64 {
	t.Helper()
	if r.EntityName == "" {
		r.EntityName = "thing"
	}
	s, err := client.Schedule(context.Background(), db, r)
	if err != nil {
		t.Fatalf("schedule %+v: %v", r, err)
	}
	return s.ID
}

// pending is a check's row in future_job, or ok false when it is no longer pending.
type pendingRow struct {
	NextCheckAt time.Time
	CheckCount  int
	Attempts    int
	LastError   *string
	ClaimedBy   *string
}

func pending(t *testing.T, id int64) (pendingRow, bool) {
	t.Helper()
	var p pendingRow
	err := db.QueryRow(context.Background(), `SELECT next_check_at, check_count, attempts, last_error, claimed_by
	  FROM prescient.future_job WHERE id = $1`, id).Scan(&p.NextCheckAt, &p.CheckCount, &p.Attempts, &p.LastError, &p.ClaimedBy)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, false
	}
	if err != nil {
		t.Fatalf("future_job %d: %v", id, err)
	}
	return p, true
}

// historyRow is a finished check's latest row in job_history (a retried check has more than one).
type historyRow struct {
	Outcome    string
	CheckCount int
	Attempts   int
	LastError  *string
	Result     *string
	FinishedBy string
}

func history(t *testing.T, id int64) (historyRow, bool) {
	t.Helper()
	var h historyRow
	err := db.QueryRow(context.Background(), `SELECT outcome, check_count, attempts, last_error, result::text, finished_by
	  FROM prescient.job_history WHERE id = $1 ORDER BY history_id DESC LIMIT 1`, id).Scan(&h.Outcome, &h.CheckCount, &h.Attempts, &h.LastError, &h.Result,
		&h.FinishedBy)
	if errors.Is(err, pgx.ErrNoRows) {
		return h, false
	}
	if err != nil {
		t.Fatalf("job_history %d: %v", id, err)
	}
	return h, true
}

// waitFor polls cond every 20 ms until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runWorker runs w.Run in the background; the returned stop cancels it and gives Run's error.
func runWorker(t *testing.T, w *prescient.Worker) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(15 * time.Second):
				t.Fatalf("Run did not return 15 s after its context was cancelled")
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// countingLogger counts the protocol's calls a pool makes (pgx logs each statement it ran), and the most
// checks one call of each named (its ids, the second argument).
type countingLogger struct {
	mu    sync.Mutex
	calls map[string]int
	most  map[string]int
}

func (l *countingLogger) Log(ctx context.Context, level pgx.LogLevel, msg string, data map[string]interface{}) {
	sql, _ := data["sql"].(string)
	if msg != "Query" || !strings.Contains(sql, "prescient.worker_") {
		return
	}
	name := sql[strings.Index(sql, "prescient.worker_")+len("prescient."):]
	name = name[:strings.Index(name, "(")]
	args, _ := data["args"].([]interface{})
	l.mu.Lock()
	l.calls[name]++
	if len(args) > 1 {
		if ids, ok := args[1].([]int64); ok && len(ids) > l.most[name] {
			l.most[name] = len(ids)
		}
	}
	l.mu.Unlock()
}

func (l *countingLogger) count(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[name]
}

func (l *countingLogger) mostChecks(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.most[name]
}

// countingPool is a pool of its own whose protocol calls are counted.
func countingPool(t *testing.T) (*pgxpool.Pool, *countingLogger) {
	t.Helper()
	config, err := pgxpool.ParseConfig(os.Getenv("PRESCIENT_DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	counter := &countingLogger{calls: map[string]int{}, most: map[string]int{}}
	config.ConnConfig.Logger, config.ConnConfig.LogLevel = counter, pgx.LogLevelInfo
	pool, err := pgxpool.ConnectConfig(context.Background(), config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, counter
}

// scheduleMany enqueues n checks of class due at (in one statement).
func scheduleMany(t *testing.T, class string, at time.Time, n int) {
	t.Helper()
	if _, err := db.Exec(context.Background(), `SELECT prescient.schedule($1, 'thing', i::text, $2, p_now => $2)
	  FROM generate_series(1, $3) i`, class, at, n); err != nil {
		t.Fatal(err)
	}
}

// lockedBuffer is a log both the worker's goroutines and the test read.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
