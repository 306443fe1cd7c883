package prescient_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
	"github.com/prescient-dev/prescient/jobs/workers/go/prescienttest"
)

// Each case's handler writes a ledger row and settles in the same transaction, then commits or not; what
// the worker then does must match: nothing more when the transaction settled the check, the normal path
// when it rolled back, never a second settlement, never a lease_lost line for a check settled in it.
func TestSettlingInTheHandlersTransaction(t *testing.T) {
	ctx := context.Background()
	class := newClass(t, "intx")
	if _, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS intx_ledger (check_id bigint PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	clock := prescienttest.NewClock(time.Date(2031, 7, 8, 9, 0, 0, 0, time.UTC))
	client := &prescient.Client{Clock: clock.Now}
	ids := map[string]int64{}
	for _, key := range []string{"done", "next", "fail", "rolled-back", "error-after-commit", "cancelled"} {
		ids[key] = schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: key})
	}
	workerPool, counter := countingPool(t) // the worker's own calls, counted
	var logged lockedBuffer
	var mu sync.Mutex
	settled := map[int64][]prescient.Settlement{}
	inHandler := map[int64]prescient.Settlement{}
	var lost *prescient.LeaseLostError
	worker := prescient.NewWorker(workerPool, prescient.Options{Name: "intx", Clock: clock.Now,
		Logger: prescient.LogLogger(log.New(&logged, "", 0)), OnSettled: func(s prescient.Settlement) {
			settled[s.CheckID] = append(settled[s.CheckID], s)
		}})
	worker.Handle(class, func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		tx, err := db.Begin(ctx) // the application's pool, not the worker's
		if err != nil {
			return prescient.Answer{}, err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `INSERT INTO intx_ledger VALUES ($1)`, c.ID); err != nil {
			return prescient.Answer{}, err
		}
		var st prescient.Settlement
		switch c.EntityKey {
		case "next":
			st, err = c.CompleteTx(ctx, tx, prescient.NextCheckAt(c.DueAt.Add(time.Hour)))
		case "fail":
			st, err = c.FailTx(ctx, tx, errors.New("the CRM said no"))
		case "cancelled":
			if _, err := client.Cancel(ctx, db, c.ID); err != nil { // meanwhile, elsewhere
				return prescient.Answer{}, err
			}
			st, err = c.CompleteTx(ctx, tx, prescient.Done())
			mu.Lock()
			errors.As(err, &lost)
			mu.Unlock()
		default:
			st, err = c.CompleteTx(ctx, tx, prescient.Done())
		}
		mu.Lock()
		inHandler[c.ID] = st
		mu.Unlock()
		if err != nil {
			return prescient.Answer{}, err
		}
		switch c.EntityKey {
		case "rolled-back":
			return prescient.Answer{}, errors.New("the mail server is down") // tx rolls back
		case "error-after-commit":
			if err := tx.Commit(ctx); err != nil {
				return prescient.Answer{}, err
			}
			return prescient.Answer{}, errors.New("a late error")
		}
		return prescient.Done(), tx.Commit(ctx) // this Done is not sent: the check is settled
	})
	clock.Set(clock.Now().Add(time.Second))
	if err := worker.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	ledgered := func(id int64) bool {
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM intx_ledger WHERE check_id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}

	for _, key := range []string{"done", "error-after-commit"} {
		if h, ok := history(t, ids[key]); !ok || h.Outcome != "done" || h.FinishedBy != "intx" || !ledgered(ids[key]) {
			t.Fatalf("%s: want done by intx with its ledger row, got %+v (in history %v)", key, h, ok)
		}
	}
	if p, ok := pending(t, ids["next"]); !ok || p.CheckCount != 1 || p.ClaimedBy != nil || !ledgered(ids["next"]) ||
		inHandler[ids["next"]].Outcome != "rescheduled" {
		t.Fatalf("next: want rescheduled, unleased, with its ledger row; got %+v (pending %v), %+v", p, ok,
			inHandler[ids["next"]])
	}
	if p, ok := pending(t, ids["fail"]); !ok || p.Attempts != 1 || p.LastError == nil || *p.LastError != "the CRM said no" ||
		!ledgered(ids["fail"]) {
		t.Fatalf("fail: want retried with its error and its ledger row, got %+v (pending %v)", p, ok)
	}
	// Settled in a transaction that rolled back: still leased, so the handler's error failed it, once.
	if p, ok := pending(t, ids["rolled-back"]); !ok || p.Attempts != 1 || p.LastError == nil ||
		*p.LastError != "the mail server is down" || ledgered(ids["rolled-back"]) {
		t.Fatalf("rolled-back: want failed by the handler's error, no ledger row; got %+v (pending %v)", p, ok)
	}
	// Cancelled while its handler ran: CompleteTx says so, the handler's writes roll back.
	if lost == nil || lost.CheckID != ids["cancelled"] || !errors.Is(lost, prescient.ErrLeaseLost) || ledgered(ids["cancelled"]) {
		t.Fatalf("cancelled: want a *LeaseLostError from CompleteTx and no ledger row, got %v", lost)
	}
	if h, ok := history(t, ids["cancelled"]); !ok || h.Outcome != "cancelled" {
		t.Fatalf("cancelled: %+v (in history %v)", h, ok)
	}

	want := map[string]string{"done": "done", "next": "rescheduled", "fail": "retried", "rolled-back": "retried",
		"error-after-commit": "done", "cancelled": "lease_lost"}
	for key, outcome := range want {
		if got := settled[ids[key]]; len(got) != 1 || got[0].Outcome != outcome {
			t.Fatalf("%s: OnSettled saw %+v, want one %s", key, got, outcome)
		}
	}
	// The worker sent only the rolled-back check's failure: the others were settled by their transactions.
	if c, f := counter.count("worker_complete"), counter.count("worker_fail"); c != 0 || f != 1 {
		t.Fatalf("the worker itself sent %d completions and %d failures, want 0 and 1:\n%s", c, f, logged.String())
	}
	for _, line := range strings.Split(logged.String(), "\n") {
		if strings.Contains(line, "lease lost") && !strings.Contains(line, fmt.Sprintf(" check=%d ", ids["cancelled"])) {
			t.Fatalf("a lease_lost line for a check settled in its transaction: %s", line)
		}
	}
	t.Logf("worker log:\n%s", logged.String())
}
