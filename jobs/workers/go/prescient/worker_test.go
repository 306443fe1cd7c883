package prescient_test

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
	"github.com/prescient-dev/prescient/jobs/workers/go/prescienttest"
)

// ahead is a clock a minute ahead of the real one: checks scheduled on the database's clock are due at once,
// and leases still expire in real time.
func ahead() time.Time { return time.Now().Add(time.Minute) }

func TestHandlerErrorsAndPanicsFailTheirCheckAlone(t *testing.T) {
	class := newClass(t, "errors")
	clock := prescienttest.NewClock(time.Date(2031, 5, 6, 7, 0, 0, 0, time.UTC))
	client := &prescient.Client{Clock: clock.Now}
	failing := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "fails", Payload: map[string]string{"do": "fail"}})
	panicking := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "panics", Payload: map[string]string{"do": "panic"}})
	fine := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "fine", Payload: map[string]string{"do": "next"}})
	worker := prescient.NewWorker(db, prescient.Options{Name: "errors", Clock: clock.Now, Logger: testLogger(t)})
	seen := map[int64]*prescient.Check{}
	var mu sync.Mutex
	worker.Handle(class, func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		mu.Lock()
		seen[c.ID] = c
		mu.Unlock()
		var p struct{ Do string }
		if err := json.Unmarshal(c.Payload, &p); err != nil {
			return prescient.Answer{}, err
		}
		switch p.Do {
		case "fail":
			return prescient.Answer{}, errors.New("the CRM said no \x00 (with a NUL)")
		case "panic":
			panic("boom")
		}
		return prescient.NextCheckAt(c.DueAt.Add(time.Hour)), nil
	})

	clock.Set(clock.Now().Add(time.Second))
	if err := worker.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 || seen[fine].EntityKey != "fine" || seen[fine].CheckCount != 0 || seen[fine].Attempts != 0 {
		t.Fatalf("the handler saw %v", seen)
	}
	p, ok := pending(t, failing)
	if !ok || p.Attempts != 1 || p.LastError == nil || *p.LastError != `the CRM said no \0 (with a NUL)` {
		t.Fatalf("the failing check: want retried with its error, got %+v (pending %v)", p, ok)
	}
	p, ok = pending(t, panicking)
	if !ok || p.Attempts != 1 || p.LastError == nil || !strings.Contains(*p.LastError, "panic: boom") {
		t.Fatalf("the panicking check: want retried with the panic, got %+v (pending %v)", p, ok)
	}
	p, ok = pending(t, fine)
	if !ok || p.Attempts != 0 || p.CheckCount != 1 || !p.NextCheckAt.Equal(seen[fine].DueAt.Add(time.Hour)) {
		t.Fatalf("the fine check: want rescheduled an hour after its due time, got %+v (pending %v)", p, ok)
	}

	// The retry sees the previous attempt's error.
	clock.Set(p.NextCheckAt.Add(-time.Second)) // the failed ones' backoff is well under an hour
	seen = map[int64]*prescient.Check{}
	if err := worker.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := seen[failing]; c == nil || c.Attempts != 1 || c.LastError != `the CRM said no \0 (with a NUL)` {
		t.Fatalf("the retry of the failing check: %+v", c)
	}
}

func TestEachAttemptOfATracedCheckIsASpanOfItsOwnInTheCallersTrace(t *testing.T) {
	class := newClass(t, "traced")
	clock := prescienttest.NewClock(time.Date(2031, 5, 6, 7, 0, 0, 0, time.UTC))
	client := &prescient.Client{Clock: clock.Now}
	traced := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "traced",
		Traceparent: callerTraceparent, Tracestate: "vendor=abc"})
	plain := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "plain"})
	worker := prescient.NewWorker(db, prescient.Options{Name: "traced", Clock: clock.Now, Logger: testLogger(t)})
	var mu sync.Mutex
	var seen []prescient.Check
	worker.Handle(class, func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		mu.Lock()
		seen = append(seen, *c)
		mu.Unlock()
		if c.ID == traced && c.Attempts == 0 {
			return prescient.Answer{}, errors.New("first attempt")
		}
		return prescient.Done(), nil
	})
	clock.Set(clock.Now().Add(time.Second))
	if err := worker.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	clock.Set(clock.Now().Add(time.Hour)) // past the retry's backoff
	if err := worker.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}

	caller := strings.Split(callerTraceparent, "-")
	spans := map[string]bool{}
	for _, c := range seen {
		if c.ID == plain {
			if c.Traceparent != "" || c.Tracestate != "" {
				t.Fatalf("the untraced check's run has a trace context: %q %q", c.Traceparent, c.Tracestate)
			}
			continue
		}
		run := strings.Split(c.Traceparent, "-")
		if len(run) != 4 || run[0] != "00" || run[1] != caller[1] || run[3] != caller[3] || c.Tracestate != "vendor=abc" {
			t.Fatalf("attempt %d: want the caller's trace, got %q %q", c.Attempts, c.Traceparent, c.Tracestate)
		}
		spans[run[2]] = true
	}
	if len(seen) != 3 || len(spans) != 2 || spans[caller[2]] {
		t.Fatalf("want two runs of the traced check, each a span of its own (not the caller's): %+v", seen)
	}
}

func TestResultsAreKeptAndAnOversizedOneFailsItsCheckAlone(t *testing.T) {
	class := newClass(t, "results")
	clock := prescienttest.NewClock(time.Date(2031, 5, 6, 8, 0, 0, 0, time.UTC))
	client := &prescient.Client{Clock: clock.Now}
	small := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "small"})
	big := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "big"})
	plain := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "plain"})
	var settled []prescient.Settlement
	worker := prescient.NewWorker(db, prescient.Options{Name: "results", Clock: clock.Now, Logger: testLogger(t),
		OnSettled: func(s prescient.Settlement) { settled = append(settled, s) }})
	worker.Handle(class, func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		switch c.EntityKey {
		case "small":
			return prescient.DoneWithResult(json.RawMessage(`{"sent": true}`)), nil
		case "big":
			return prescient.DoneWithResult(json.RawMessage(`"` + strings.Repeat("x", 70000) + `"`)), nil
		}
		return prescient.Done(), nil
	})
	clock.Set(clock.Now().Add(time.Second))
	if err := worker.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h, ok := history(t, small); !ok || h.Outcome != "done" || h.Result == nil || *h.Result != `{"sent": true}` {
		t.Fatalf("small result: %+v %v", h, ok)
	}
	if h, ok := history(t, plain); !ok || h.Outcome != "done" || h.Result != nil {
		t.Fatalf("no result: %+v %v", h, ok)
	}
	p, ok := pending(t, big)
	if !ok || p.Attempts != 1 || p.LastError == nil || !strings.Contains(*p.LastError, "65536") {
		t.Fatalf("an oversized result: want the check failed with the refusal, got %+v (pending %v)", p, ok)
	}
	if len(settled) != 3 {
		t.Fatalf("OnSettled saw %+v", settled)
	}
}

func TestTakesAndSettlesInBatches(t *testing.T) {
	ctx := context.Background()
	class := newClass(t, "batches")
	const checks = 600
	clock := prescienttest.NewClock(time.Date(2031, 5, 6, 9, 0, 0, 0, time.UTC))
	scheduleMany(t, class, clock.Now(), checks)
	pool, counter := countingPool(t)
	var ran, done int64
	worker := prescient.NewWorker(pool, prescient.Options{Name: "batches", Concurrency: 50, BatchSize: 50,
		Clock: clock.Now, Logger: testLogger(t), OnSettled: func(s prescient.Settlement) {
			if s.Outcome == "done" {
				atomic.AddInt64(&done, 1)
			}
		}})
	worker.Handle(class, func(context.Context, *prescient.Check) (prescient.Answer, error) {
		atomic.AddInt64(&ran, 1)
		return prescient.Done(), nil
	})
	clock.Set(clock.Now().Add(time.Second))
	if err := worker.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	takes, completes := counter.count("worker_take"), counter.count("worker_complete")
	t.Logf("%d checks: %d takes, %d completes", checks, takes, completes)
	if ran != checks || done != checks {
		t.Fatalf("ran %d, done %d of %d", ran, done, checks)
	}
	// 12 full batches and the take that found nothing; per-check round trips would be hundreds.
	if takes < 13 || takes > 30 || completes > takes || counter.count("worker_fail") != 0 {
		t.Fatalf("%d checks in batches of 50: %d takes and %d completes", checks, takes, completes)
	}
}

func TestRunWakesOnNotification(t *testing.T) {
	class := newClass(t, "wake")
	ran := make(chan int64, 1)
	// No clock: the database's. Nothing is pending, so without LISTEN the worker would sleep a minute.
	worker := prescient.NewWorker(db, prescient.Options{Name: "wake", Logger: testLogger(t)})
	worker.Handle(class, func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		ran <- c.ID
		return prescient.Done(), nil
	})
	stop := runWorker(t, worker)
	time.Sleep(300 * time.Millisecond) // asleep by now
	id := schedule(t, &prescient.Client{}, prescient.ScheduleRequest{Job: class, EntityKey: "1"})
	select {
	case got := <-ran:
		if got != id {
			t.Fatalf("ran check %d, want %d", got, id)
		}
	case <-time.After(4 * time.Second): // due at the next slot boundary, within a second
		t.Fatalf("check %d not run 4 s after it was scheduled: the notification did not wake the worker", id)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "the check settled", func() bool { _, ok := history(t, id); return ok })
}

func TestRunStopsGracefully(t *testing.T) {
	t.Parallel()
	class := newClass(t, "stop")
	client := &prescient.Client{Clock: time.Now}
	quick := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "quick"})
	stuck := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "stuck"})
	started := make(chan struct{}, 2)
	stuckCancelled := make(chan struct{})
	worker := prescient.NewWorker(db, prescient.Options{Name: "stop", Concurrency: 2, Grace: 700 * time.Millisecond,
		Clock: ahead, Logger: testLogger(t)})
	worker.Handle(class, func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		started <- struct{}{}
		if c.ID == quick {
			time.Sleep(400 * time.Millisecond) // ignores ctx: finishes within the grace
			return prescient.Done(), nil
		}
		<-ctx.Done() // outlasts the grace
		close(stuckCancelled)
		return prescient.Answer{}, ctx.Err()
	})
	stop := runWorker(t, worker)
	<-started
	<-started
	began := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 600*time.Millisecond || took > 3*time.Second {
		t.Fatalf("Run returned %s after the stop; want the grace (700 ms)", took)
	}
	// Run cancels the stuck handler's context before it returns; the handler's goroutine sees it a moment
	// later (a loaded machine showed it after Run returned), so wait for it rather than look once.
	select {
	case <-stuckCancelled:
	case <-time.After(2 * time.Second):
		t.Fatal("the stuck handler's context was not cancelled after the grace")
	}
	if h, ok := history(t, quick); !ok || h.Outcome != "done" {
		t.Fatalf("the check that finished within the grace: %+v (in history %v)", h, ok)
	}
	p, ok := pending(t, stuck)
	if !ok || p.ClaimedBy != nil || p.Attempts != 0 || p.CheckCount != 0 {
		t.Fatalf("the check still running after the grace: want given back untouched, got %+v (pending %v)", p, ok)
	}
}

func TestHeartbeatsKeepLeasesAndTheirAbsenceLosesThem(t *testing.T) {
	t.Parallel()
	for _, noHeartbeat := range []bool{false, true} {
		noHeartbeat := noHeartbeat
		t.Run(map[bool]string{false: "heartbeat", true: "no-heartbeat"}[noHeartbeat], func(t *testing.T) {
			t.Parallel()
			class := newClass(t, "lease")
			id := schedule(t, &prescient.Client{}, prescient.ScheduleRequest{Job: class, EntityKey: "slow"})
			var settled []prescient.Settlement
			worker := prescient.NewWorker(db, prescient.Options{Name: "lease", Lease: 600 * time.Millisecond,
				NoHeartbeat: noHeartbeat, Clock: ahead, Logger: testLogger(t),
				OnSettled: func(s prescient.Settlement) { settled = append(settled, s) }})
			var runs int32
			worker.Handle(class, func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
				if atomic.AddInt32(&runs, 1) == 1 {
					time.Sleep(1500 * time.Millisecond) // over two leases
				}
				return prescient.Done(), nil
			})
			if err := worker.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			if h, ok := history(t, id); !ok || h.Outcome != "done" {
				t.Fatalf("the check is not done: %+v", h)
			}
			if !noHeartbeat {
				if runs != 1 || len(settled) != 1 || settled[0].Outcome != "done" || settled[0].Err != nil {
					t.Fatalf("with heartbeats: want one run, done; got %d runs, %+v", runs, settled)
				}
				return
			}
			// Without heartbeats the lease expired during the first run: the check was taken again (at least
			// once), and the first run's answer was refused.
			var lost *prescient.LeaseLostError
			if runs != 2 || len(settled) != 2 {
				t.Fatalf("without heartbeats: want two runs and two settlements, got %d runs, %+v", runs, settled)
			}
			for _, s := range settled {
				if s.Outcome == "lease_lost" {
					if !errors.As(s.Err, &lost) || lost.CheckID != id || lost.Reason == "" ||
						!strings.Contains(lost.Error(), "lease lost") {
						t.Fatalf("the refused settlement: %+v", s)
					}
				}
			}
			if lost == nil {
				t.Fatalf("without heartbeats: no settlement was refused: %+v", settled)
			}
		})
	}
}

func TestALostLeaseCancelsTheHandler(t *testing.T) {
	t.Parallel()
	class := newClass(t, "lost")
	client := &prescient.Client{}
	id := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "1"})
	running := make(chan struct{})
	cancelled := make(chan time.Time, 1)
	worker := prescient.NewWorker(db, prescient.Options{Name: "lost", Lease: 600 * time.Millisecond, Clock: ahead,
		Logger: testLogger(t)})
	worker.Handle(class, func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		close(running)
		select {
		case <-ctx.Done():
			cancelled <- time.Now()
			return prescient.Answer{}, ctx.Err()
		case <-time.After(5 * time.Second):
			return prescient.Done(), nil
		}
	})
	stop := runWorker(t, worker)
	<-running
	if ok, err := client.Cancel(context.Background(), db, id); err != nil || !ok {
		t.Fatalf("cancel: %v %v", ok, err)
	}
	select {
	case <-cancelled: // the next heartbeat (every 200 ms) was refused
	case <-time.After(2 * time.Second):
		t.Fatal("the handler of a cancelled check was not cancelled at the next heartbeat")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestRunRefusesAClassThatIsNotAWorkerClass(t *testing.T) {
	worker := prescient.NewWorker(db, prescient.Options{Name: "refused", Logger: testLogger(t)})
	worker.Handle("emit", func(context.Context, *prescient.Check) (prescient.Answer, error) { return prescient.Done(), nil })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := worker.Run(ctx)
	var refused *prescient.RefusedError
	if !errors.As(err, &refused) || refused.Op != "take" || refused.Code != "PR400" || !strings.Contains(refused.Reason, "emit") {
		t.Fatalf("a runner's class: want the take refused (PR400) naming it, got %v", err)
	}
}

func TestAGroupRunsInOrderOneAtATimeWithoutStalling(t *testing.T) {
	t.Parallel()
	class := newClass(t, "group")
	client := &prescient.Client{}
	var ids []int64
	for _, key := range []string{"1", "2", "3", "4"} {
		ids = append(ids, schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: key, GroupKey: class}))
	}
	var mu sync.Mutex
	var order []int64
	var running, overlapped int32
	worker := prescient.NewWorker(db, prescient.Options{Name: "group", Concurrency: 4, Clock: ahead, Logger: testLogger(t)})
	worker.Handle(class, func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		if atomic.AddInt32(&running, 1) > 1 {
			atomic.StoreInt32(&overlapped, 1)
		}
		defer atomic.AddInt32(&running, -1)
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		order = append(order, c.ID)
		mu.Unlock()
		return prescient.Done(), nil
	})
	began := time.Now()
	stop := runWorker(t, worker)
	// Each settlement frees the group's next check, and wakes the worker at once (not at a poll's end).
	waitFor(t, 3*time.Second, "the group's four checks done", func() bool {
		_, ok := history(t, ids[3])
		return ok
	})
	took := time.Since(began)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 4 || order[0] != ids[0] || order[1] != ids[1] || order[2] != ids[2] || order[3] != ids[3] || overlapped != 0 {
		t.Fatalf("a group's checks ran in the order %v (scheduled %v), overlapping: %v", order, ids, overlapped != 0)
	}
	if took > 1500*time.Millisecond {
		t.Fatalf("four checks of a group took %s: the worker waited between them", took)
	}
}

// A take asks for what the worker can start soon: fast handlers are taken in batches, whatever the free
// places; slow ones about a place at a time, so the worker holds no checks another could start sooner.
func TestATakeAsksForWhatTheWorkerCanStartSoon(t *testing.T) {
	ctx := context.Background()
	pool, counter := countingPool(t)
	clock := prescienttest.NewClock(time.Date(2031, 5, 6, 10, 0, 0, 0, time.UTC))

	fast := newClass(t, "fast")
	scheduleMany(t, fast, clock.Now(), 2000)
	worker := prescient.NewWorker(pool, prescient.Options{Name: "fast", Concurrency: 2, Clock: clock.Now,
		Logger: testLogger(t)})
	worker.Handle(fast, func(context.Context, *prescient.Check) (prescient.Answer, error) { return prescient.Done(), nil })
	clock.Set(clock.Now().Add(time.Second))
	if err := worker.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	var done int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM prescient.job_history WHERE job = $1 AND outcome = 'done'`,
		fast).Scan(&done); err != nil || done != 2000 {
		t.Fatalf("fast: %d of 2000 done (%v)", done, err)
	}
	// Two places: a take per free place would be 1 000 takes at least.
	t.Logf("2 000 fast checks, 2 places: %d takes", counter.count("worker_take"))
	if takes := counter.count("worker_take"); takes > 40 {
		t.Fatalf("2 000 fast checks, 2 places: %d takes; want batches whatever the free places", takes)
	}

	slow := newClass(t, "slow")
	scheduleMany(t, slow, clock.Now(), 12)
	worker = prescient.NewWorker(pool, prescient.Options{Name: "slow", Concurrency: 2, Prefetch: 50 * time.Millisecond,
		Clock: clock.Now, Logger: testLogger(t)})
	var mu sync.Mutex
	mostHeld := 0
	worker.Handle(slow, func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		time.Sleep(100 * time.Millisecond)
		var held int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM prescient.future_job WHERE job = $1 AND claimed_by = 'slow'`,
			slow).Scan(&held); err != nil {
			return prescient.Answer{}, err
		}
		mu.Lock()
		if held > mostHeld {
			mostHeld = held
		}
		mu.Unlock()
		return prescient.Done(), nil
	})
	clock.Set(clock.Now().Add(time.Second))
	if err := worker.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	// 2 places, and 100 ms handlers free one place in the 50 ms ahead: 2 + 1 held at most.
	t.Logf("12 checks of 100 ms, 2 places: held up to %d at once", mostHeld)
	if mostHeld < 2 || mostHeld > 3 {
		t.Fatalf("12 checks of 100 ms, 2 places: the worker held up to %d at once; want its places and one", mostHeld)
	}
}

// Checks taken ahead and not started are given back at the stop at once, untouched, with the running ones
// that outlast the grace.
func TestAStopGivesBackTheChecksNotStarted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	class := newClass(t, "queued")
	scheduleMany(t, class, time.Now(), 50)
	var logged lockedBuffer
	worker := prescient.NewWorker(db, prescient.Options{Name: "queued", Concurrency: 1, Grace: 300 * time.Millisecond,
		Clock: ahead, Logger: prescient.LogLogger(log.New(&logged, "", 0))})
	var runs int32
	blocked := make(chan struct{})
	worker.Handle(class, func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		if atomic.AddInt32(&runs, 1) <= 5 { // fast: the next take asks for many
			return prescient.Done(), nil
		}
		close(blocked)
		<-ctx.Done() // outlasts the grace
		return prescient.Answer{}, ctx.Err()
	})
	stop := runWorker(t, worker)
	<-blocked
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var done, untouched int
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM prescient.job_history WHERE job = $1 AND outcome = 'done'),
	    (SELECT count(*) FROM prescient.future_job WHERE job = $1 AND claimed_by IS NULL AND attempts = 0 AND check_count = 0)`,
		class).Scan(&done, &untouched); err != nil {
		t.Fatal(err)
	}
	if done != 5 || untouched != 45 || atomic.LoadInt32(&runs) != 6 {
		t.Fatalf("stopped with one check running and the rest queued: %d done, %d pending untouched, %d runs; "+
			"want 5, 45, 6\n%s", done, untouched, runs, logged.String())
	}
	if !strings.Contains(logged.String(), `INFO checks given back worker=queued `) ||
		!strings.Contains(logged.String(), `reason="not started" released=44`) {
		t.Fatalf("no line for the 44 checks given back unstarted:\n%s", logged.String())
	}
}
