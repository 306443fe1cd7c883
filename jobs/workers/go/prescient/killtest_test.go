package prescient_test

import (
	"bytes"
	"context"
	"log"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
)

// The kill test (issue 58, effects exactly once): a worker process whose handler writes a ledger row per check
// and completes the check in the same transaction is killed with SIGKILL mid-run; a second worker finishes the
// rest. Every check must have exactly one ledger row and one history row. With the settlement apart from the
// handler's writes (PRESCIENT_KILL_TEST_SETTLE=separate: the handler commits its row, then returns Done), the
// runs the killed worker had not settled yet run again, and their rows are there twice: the test fails.
const (
	killChecks      = 10000
	killWorkerClass = "PRESCIENT_KILL_TEST_CLASS" // set: this process is the worker to be killed
	killSettle      = "PRESCIENT_KILL_TEST_SETTLE"
	// How long what a worker does may stand still before the test fails. A stall, not a speed: how long the
	// run takes depends on the machine and on what runs beside it (the suite runs the four languages' tests
	// at once).
	killStall = 15 * time.Second
)

// waitWhileMoving waits until goal(count()) while the worker makes progress: it fails when the worker has
// ended (gone closed), or when the count stands still for killStall, saying where it stood; stalled, if set,
// is called first (to stop the worker and say what it logged).
func waitWhileMoving(t *testing.T, what string, count func() int, goal func(int) bool, gone <-chan struct{},
	stalled func() string) {
	t.Helper()
	seen, since := count(), time.Now()
	for !goal(seen) {
		ended := false
		select {
		case <-gone:
			ended = true
		default:
		}
		if ended || time.Since(since) > killStall {
			said := ""
			if stalled != nil {
				said = stalled()
			}
			t.Fatalf("waited for %s: stood at %d for %s; worker ended: %v; %s", what, seen,
				time.Since(since).Round(time.Second), ended, said)
		}
		time.Sleep(20 * time.Millisecond)
		if now := count(); now != seen {
			seen, since = now, time.Now()
		}
	}
}

// killTestHandler writes the check's ledger row and answers it: in one transaction, or (separate) one after
// the other, as a handler that settles by returning does.
func killTestHandler(pool *pgxpool.Pool, worker string, separate bool) prescient.HandlerFunc {
	return func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		if separate {
			_, err := pool.Exec(ctx, `INSERT INTO kill_ledger (check_id, worker) VALUES ($1, $2)`, c.ID, worker)
			return prescient.Done(), err
		}
		tx, err := pool.Begin(ctx)
		if err != nil {
			return prescient.Answer{}, err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `INSERT INTO kill_ledger (check_id, worker) VALUES ($1, $2)`, c.ID, worker); err != nil {
			return prescient.Answer{}, err
		}
		if _, err := c.CompleteTx(ctx, tx, prescient.Done()); err != nil {
			return prescient.Answer{}, err
		}
		return prescient.Done(), tx.Commit(ctx)
	}
}

// killTestPool is a pool with a connection for each handler and the worker's own calls.
func killTestPool(t *testing.T) *pgxpool.Pool {
	config, err := pgxpool.ParseConfig(os.Getenv("PRESCIENT_DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	config.MaxConns = 16
	pool, err := pgxpool.ConnectConfig(context.Background(), config)
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

func killTestWorker(pool *pgxpool.Pool, name, class string, logger prescient.Logger) *prescient.Worker {
	w := prescient.NewWorker(pool, prescient.Options{Name: name, Lease: 2 * time.Second, Clock: ahead, Logger: logger})
	w.Handle(class, killTestHandler(pool, name, os.Getenv(killSettle) == "separate"))
	return w
}

func TestAWorkerKilledMidRunHasEachEffectExactlyOnce(t *testing.T) {
	if class := os.Getenv(killWorkerClass); class != "" { // the worker process, until it is killed
		pool := killTestPool(t)
		_ = killTestWorker(pool, "killed", class, prescient.LogLogger(log.New(os.Stderr, "", log.Lmicroseconds))).Run(context.Background())
		t.Fatal("the worker to be killed stopped by itself")
	}
	ctx := context.Background()
	began := time.Now()
	class := newClass(t, "kill")
	if _, err := db.Exec(ctx, `CREATE TABLE kill_ledger (check_id bigint NOT NULL, worker text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `SELECT prescient.schedule($1, 'thing', i::text, now()) FROM generate_series(1, $2) i`,
		class, killChecks); err != nil {
		t.Fatal(err)
	}
	ledgerRows := func() (rows, checks int) {
		if err := db.QueryRow(ctx, `SELECT count(*), count(DISTINCT check_id) FROM kill_ledger`).Scan(&rows, &checks); err != nil {
			t.Fatal(err)
		}
		return rows, checks
	}

	var stderr bytes.Buffer
	child := exec.Command(os.Args[0], "-test.run=^TestAWorkerKilledMidRunHasEachEffectExactlyOnce$")
	child.Env = append(os.Environ(), killWorkerClass+"="+class)
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	childEnded := make(chan struct{})
	go func() { _ = child.Wait(); close(childEnded) }()
	ledgered := func() int { rows, _ := ledgerRows(); return rows }
	waitWhileMoving(t, "the first worker to run a quarter of the checks", ledgered,
		func(rows int) bool { return rows >= killChecks/4 }, childEnded, func() string {
			_ = child.Process.Kill()
			<-childEnded // its log is whole, and no longer written
			return "its log:\n" + tail(stderr.String(), 2000)
		})
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-childEnded
	atKill, _ := ledgerRows()
	t.Logf("the killed worker's log:\n%s", tail(stderr.String(), 2000))

	pool := killTestPool(t)
	defer pool.Close()
	stop := runWorker(t, killTestWorker(pool, "second", class, testLogger(t)))
	settled := func() int {
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM prescient.job_history WHERE job = $1`, class).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitWhileMoving(t, "the second worker to settle the rest", settled, func(n int) bool { return n >= killChecks }, nil,
		func() string { return "it runs in the test's process: its log is the test's" })
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	rows, checks := ledgerRows()
	var historyRows, historyChecks, done, byKilled, bySecond, pendingLeft int
	if err := db.QueryRow(ctx, `SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE outcome = 'done'),
	    count(*) FILTER (WHERE finished_by = 'killed'), count(*) FILTER (WHERE finished_by = 'second'),
	    (SELECT count(*) FROM prescient.future_job WHERE job = $1)
	  FROM prescient.job_history WHERE job = $1`, class).Scan(&historyRows, &historyChecks, &done, &byKilled, &bySecond,
		&pendingLeft); err != nil {
		t.Fatal(err)
	}
	var strays int // ledger rows of checks not in the history, or history rows without a ledger row
	if err := db.QueryRow(ctx, `SELECT count(*) FROM kill_ledger l FULL JOIN
	    (SELECT id FROM prescient.job_history WHERE job = $1) h ON h.id = l.check_id
	  WHERE l.check_id IS NULL OR h.id IS NULL`, class).Scan(&strays); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d checks: killed after %d ledger rows; %d settled by the killed worker, %d by the second; "+
		"ledger %d rows of %d checks; history %d rows of %d checks; %s in all", killChecks, atKill, byKilled,
		bySecond, rows, checks, historyRows, historyChecks, time.Since(began).Round(time.Millisecond))
	if byKilled == 0 || bySecond == 0 {
		t.Fatalf("the kill was not mid-run: %d settled by the killed worker, %d by the second", byKilled, bySecond)
	}
	if rows != killChecks || checks != killChecks {
		t.Fatalf("ledger: %d rows for %d checks of %d: an effect ran twice (or not at all)", rows, checks, killChecks)
	}
	if historyRows != killChecks || historyChecks != killChecks || done != killChecks || pendingLeft != 0 || strays != 0 {
		t.Fatalf("history: %d rows of %d checks (%d done), %d pending, %d ledger rows and history rows apart",
			historyRows, historyChecks, done, pendingLeft, strays)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
