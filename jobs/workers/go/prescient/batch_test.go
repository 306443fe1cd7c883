package prescient_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
	"github.com/prescient-dev/prescient/jobs/workers/go/prescienttest"
)

// A batch handler gets many checks of its class in one call and answers each: done, a next time, a failure;
// in its own transaction too. An error, or answers of another number, fails the call's checks.
func TestABatchHandlerAnswersEachCheck(t *testing.T) {
	ctx := context.Background()
	class := newClass(t, "batch")
	clock := prescienttest.NewClock(time.Date(2031, 9, 1, 8, 0, 0, 0, time.UTC))
	client := &prescient.Client{Clock: clock.Now}
	ids := map[string]int64{}
	keys := []string{"done", "next", "fail", "in-tx"}
	for _, key := range keys {
		ids[key] = schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: key})
	}
	for i := 0; i < 40; i++ {
		schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "more"})
	}
	if _, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS batch_ledger (check_id bigint PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var calls []int
	worker := prescient.NewWorker(db, prescient.Options{Name: "batch", Clock: clock.Now, Logger: testLogger(t)})
	worker.HandleBatch(class, func(ctx context.Context, checks []*prescient.Check) ([]prescient.Answer, error) {
		mu.Lock()
		calls = append(calls, len(checks))
		mu.Unlock()
		answers := make([]prescient.Answer, len(checks))
		for i, c := range checks {
			switch c.EntityKey {
			case "next":
				answers[i] = prescient.NextCheckAt(c.DueAt.Add(time.Hour))
			case "fail":
				answers[i] = prescient.Fail(errors.New("no stock"))
			case "in-tx":
				tx, err := db.Begin(ctx)
				if err != nil {
					return nil, err
				}
				defer tx.Rollback(ctx)
				if _, err := tx.Exec(ctx, `INSERT INTO batch_ledger VALUES ($1)`, c.ID); err != nil {
					return nil, err
				}
				if _, err := c.CompleteTx(ctx, tx, prescient.Done()); err != nil {
					return nil, err
				}
				if err := tx.Commit(ctx); err != nil {
					return nil, err
				}
				answers[i] = prescient.NextCheckAt(c.DueAt.Add(time.Hour)) // ignored: settled in the transaction
			default:
				answers[i] = prescient.Done()
			}
		}
		return answers, nil
	})
	clock.Set(clock.Now().Add(time.Second))
	if err := worker.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if len(calls) == 0 || len(calls) > 3 {
		t.Fatalf("44 checks in batch calls of %v: want a few calls", calls)
	}
	for _, key := range []string{"done", "in-tx"} {
		if h, ok := history(t, ids[key]); !ok || h.Outcome != "done" || h.CheckCount != 1 {
			t.Fatalf("%s: %+v (in history %v)", key, h, ok)
		}
	}
	if p, ok := pending(t, ids["next"]); !ok || p.CheckCount != 1 || p.ClaimedBy != nil {
		t.Fatalf("next: %+v (pending %v)", p, ok)
	}
	if p, ok := pending(t, ids["fail"]); !ok || p.Attempts != 1 || p.LastError == nil || *p.LastError != "no stock" {
		t.Fatalf("fail: %+v (pending %v)", p, ok)
	}
	var more int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM prescient.job_history WHERE job = $1 AND entity_key = 'more'
	  AND outcome = 'done'`, class).Scan(&more); err != nil || more != 40 {
		t.Fatalf("40 more checks: %d done (%v)", more, err)
	}

	// An error, or answers of another number, fails the checks of the call.
	for _, wrong := range []string{"error", "count"} {
		class := newClass(t, "batchwrong")
		a := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "a"})
		b := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "b"})
		worker := prescient.NewWorker(db, prescient.Options{Name: "batchwrong", Clock: clock.Now, Logger: testLogger(t)})
		worker.HandleBatch(class, func(ctx context.Context, checks []*prescient.Check) ([]prescient.Answer, error) {
			if wrong == "error" {
				return nil, errors.New("the warehouse is closed")
			}
			return []prescient.Answer{prescient.Done()}, nil
		})
		clock.Set(clock.Now().Add(time.Second))
		if err := worker.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"error": "the warehouse is closed", "count": "answered 1 of its 2 checks"}[wrong]
		for _, id := range []int64{a, b} {
			if p, ok := pending(t, id); !ok || p.Attempts != 1 || p.LastError == nil || !strings.Contains(*p.LastError, want) {
				t.Fatalf("%s: check %d: want failed with %q, got %+v (pending %v)", wrong, id, want, p, ok)
			}
		}
	}
}

// A worker whose classes all have batch handlers asks, while a place is free, for a whole call's worth
// (BatchSize), its first take too (a take of the free places alone gave the first call one check a place);
// a call's answers are settled together, in one worker_complete; and its heartbeats keep the leases of more
// checks than one worker_extend call names (extendPerCall at most: each call keeps its rows locked).
func TestABatchHandlerGetsAWholeCallAndKeepsItsLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	class := newClass(t, "batchwhole")
	const checks = 600
	scheduleMany(t, class, time.Now(), checks)
	pool, counter := countingPool(t)
	var mu sync.Mutex
	var calls []int
	outcomes := map[string]int{}
	worker := prescient.NewWorker(pool, prescient.Options{Name: "batchwhole", Concurrency: 2, BatchSize: 1000,
		Lease: 600 * time.Millisecond, Clock: ahead, Logger: testLogger(t), OnSettled: func(s prescient.Settlement) {
			mu.Lock()
			outcomes[s.Outcome]++
			mu.Unlock()
		}})
	worker.HandleBatch(class, func(ctx context.Context, checks []*prescient.Check) ([]prescient.Answer, error) {
		mu.Lock()
		calls = append(calls, len(checks))
		mu.Unlock()
		time.Sleep(1500 * time.Millisecond) // over two leases: the heartbeats (every 200 ms) keep them
		return make([]prescient.Answer, len(checks)), nil
	})
	if err := worker.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d checks: calls of %v; %d takes, %d completes, %d extends of at most %d checks", checks, calls,
		counter.count("worker_take"), counter.count("worker_complete"), counter.count("worker_extend"),
		counter.mostChecks("worker_extend"))
	if len(calls) != 1 || calls[0] != checks {
		t.Fatalf("%d checks, 2 places, batches of 1 000: calls of %v; want one call of them all", checks, calls)
	}
	if outcomes["done"] != checks || len(outcomes) != 1 {
		t.Fatalf("%d checks: want all done, leases kept; got %v", checks, outcomes)
	}
	if n := counter.count("worker_complete"); n != 1 {
		t.Fatalf("one call's answers: %d worker_complete calls; want one", n)
	}
	if n, most := counter.count("worker_extend"), counter.mostChecks("worker_extend"); n < 3 || most > 250 {
		t.Fatalf("heartbeats of %d checks: %d worker_extend calls of at most %d checks; want calls of 250 at most",
			checks, n, most)
	}
}
