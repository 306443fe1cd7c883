package prescient_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
	"github.com/prescient-dev/prescient/jobs/workers/go/prescienttest"
)

// A dead letter put back from Go: pending again, due now by the database's clock, attempts afresh, and run; a
// check pending already (PR409), a check the history has no failure of (PR404) and a runner's check (PR400) are
// refused, each a *RefusedError, and nothing is written.
func TestRetryPutsADeadLetterBackAndRefusesByCode(t *testing.T) {
	ctx := context.Background()
	class := newClass(t, "retried")
	one := 1
	if _, err := prescient.DeclareWorkerClass(ctx, db, class, prescient.Policy{MaxAttempts: &one}); err != nil {
		t.Fatal(err)
	}
	clock := prescienttest.NewClock(time.Date(2031, 5, 6, 7, 0, 0, 0, time.UTC))
	id := schedule(t, &prescient.Client{Clock: clock.Now}, prescient.ScheduleRequest{Job: class, EntityKey: "crm",
		Payload: map[string]int{"n": 1}})
	worker := prescient.NewWorker(db, prescient.Options{Name: "retrier", Clock: clock.Now, Logger: testLogger(t)})
	failing := true
	worker.Handle(class, func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		if failing {
			return prescient.Answer{}, errors.New("the CRM was down")
		}
		return prescient.Done(), nil
	})
	clock.Set(clock.Now().Add(time.Second))
	if err := worker.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if h, ok := history(t, id); !ok || h.Outcome != "failed" {
		t.Fatalf("want a dead letter, got %+v (in the history %v)", h, ok)
	}

	var before time.Time
	if err := db.QueryRow(ctx, "SELECT now()").Scan(&before); err != nil {
		t.Fatal(err)
	}
	due, err := prescient.Retry(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := pending(t, id)
	if !ok || !p.NextCheckAt.Equal(due) || due.Before(before) || due.After(before.Add(time.Minute)) || p.Attempts != 0 ||
		p.LastError == nil || *p.LastError != "the CRM was down" {
		t.Fatalf("want pending again, due now (%s), attempts afresh; got %+v (pending %v), due %s", before, p, ok, due)
	}
	var retried bool
	if err := db.QueryRow(ctx, "SELECT retried FROM prescient.job_history WHERE id = $1", id).Scan(&retried); err != nil ||
		!retried {
		t.Fatalf("the failure is not marked retried: %v %v", retried, err)
	}

	refusedWith := func(what string, id int64, code string) {
		t.Helper()
		_, err := prescient.Retry(ctx, db, id)
		var refused *prescient.RefusedError
		if !errors.As(err, &refused) || refused.Code != code || refused.Op != "retry" || refused.CheckID != id {
			t.Fatalf("%s: want a %s refusal, got %v", what, code, err)
		}
	}
	refusedWith("pending already", id, "PR409")
	refusedWith("never failed", id+1_000_000, "PR404")
	runners := int64(8_000_000_000) + int64(os.Getpid())
	if _, err := db.Exec(ctx, `INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload,
	  first_check_at, last_check_at, check_count, attempts, last_error, enqueued_on, enqueued_by, finished_at,
	  finished_by, outcome) VALUES ($1, 'noop', 'thing', 'x', '{}', now(), now(), 0, 3, 'boom', now(), 'app', now(),
	  'runner', 'failed')`, runners); err != nil {
		t.Fatal(err)
	}
	refusedWith("a runner's check", runners, "PR400")
	if _, ok := pending(t, runners); ok {
		t.Fatal("a runner's check was put back")
	}

	// The check put back runs again, its attempts counted afresh, and finishes.
	failing = false
	if err := worker.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if h, ok := history(t, id); !ok || h.Outcome != "done" || h.Attempts != 0 {
		t.Fatalf("want done after the retry, got %+v (in the history %v)", h, ok)
	}
}

// A policy on the handler's declaration: the worker declares its class with it before the first take, and the
// policy rules its checks (max_checks 1: a second look ends guard_max_checks); on a runner's class it is
// refused, Drain returns the refusal (ErrRefused), and nothing is taken.
func TestAPolicyOnTheHandlerIsDeclaredWhenTheWorkerStarts(t *testing.T) {
	ctx := context.Background()
	class := fmt.Sprintf("declared_%d_%d", os.Getpid(), time.Now().UnixNano())
	clock := prescienttest.NewClock(time.Date(2031, 5, 6, 7, 0, 0, 0, time.UTC))
	id := schedule(t, &prescient.Client{Clock: clock.Now}, prescient.ScheduleRequest{Job: class, EntityKey: "a",
		AllowUnknownClass: true})
	worker := prescient.NewWorker(db, prescient.Options{Name: "declarer", Clock: clock.Now, Logger: testLogger(t)})
	one := 1
	worker.Handle(class, func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		return prescient.NextCheckAt(clock.Now().Add(time.Minute)), nil
	}, prescient.WithPolicy(prescient.Policy{MaxChecks: &one}))
	clock.Set(clock.Now().Add(time.Second))
	if err := worker.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	var runsIn string
	var maxChecks int
	if err := db.QueryRow(ctx, `SELECT runs_in, max_checks FROM prescient.job_class WHERE job = $1`,
		class).Scan(&runsIn, &maxChecks); err != nil || runsIn != "worker" || maxChecks != 1 {
		t.Fatalf("want a worker class with max_checks 1, got %q %d (%v)", runsIn, maxChecks, err)
	}
	if h, ok := history(t, id); !ok || h.Outcome != "guard_max_checks" {
		t.Fatalf("want guard_max_checks by the declared policy, got %+v (in the history %v)", h, ok)
	}

	runner := prescient.NewWorker(db, prescient.Options{Name: "declarer", Clock: clock.Now, Logger: testLogger(t)})
	runner.Handle("noop", func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		return prescient.Done(), nil
	}, prescient.WithPolicy(prescient.Policy{MaxChecks: &one}))
	if err := runner.Drain(ctx); !errors.Is(err, prescient.ErrRefused) {
		t.Fatalf("a policy on a runner's class: want ErrRefused, got %v", err)
	}
}
