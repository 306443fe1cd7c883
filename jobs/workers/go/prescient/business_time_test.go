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

// The calendar the answers below count in, officeHours (weekdays 09:00 to 17:00 in Berlin), set once: setting a
// calendar computes its open time for its whole range, a second or so.
var (
	deskOnce sync.Once
	deskErr  error
)

func setDeskCalendar(t *testing.T) {
	t.Helper()
	deskOnce.Do(func() {
		_, deskErr = db.Exec(context.Background(), `SELECT prescient.calendar_set('desk', 'Europe/Berlin', $1::jsonb)`,
			officeHours)
	})
	if deskErr != nil {
		t.Fatalf("calendar_set desk: %v", deskErr)
	}
}

// businessAfter is when the database says delay of the desk's open time after now ends, rounded up to the slot
// grid as a settlement rounds an answer's time.
func businessAfter(t *testing.T, now time.Time, delay string) time.Time {
	t.Helper()
	var at time.Time
	if err := db.QueryRow(context.Background(), `SELECT prescient.slot_for(prescient.business_after('desk', $1, $2),
	  $1, s.slot_seconds) FROM prescient.settings s`, now, delay).Scan(&at); err != nil {
		t.Fatalf("business_after desk %s: %v", delay, err)
	}
	return at
}

// A handler answers "look again in 4 working hours of the desk" (docs/business-time.md, "Answers in business
// time"), by returning it or in its own transaction: the check waits that much of the calendar's open time,
// counted from the worker's now.
func TestAHandlerAnswersInBusinessTime(t *testing.T) {
	ctx := context.Background()
	setDeskCalendar(t)
	class := newClass(t, "business")
	// Due on a Wednesday at 16:00 in Berlin (14:00 UTC), an hour before the desk closes.
	clock := prescienttest.NewClock(time.Date(2031, 9, 3, 13, 59, 59, 0, time.UTC))
	client := &prescient.Client{Clock: clock.Now}
	delays := map[string]string{"returned": "4h", "days": "3bd", "in-tx": "1h30m"}
	ids := map[string]int64{}
	for key := range delays {
		ids[key] = schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: key})
	}
	worker := prescient.NewWorker(db, prescient.Options{Name: "business", Clock: clock.Now, Logger: testLogger(t)})
	worker.Handle(class, func(ctx context.Context, c *prescient.Check) (prescient.Answer, error) {
		answer := prescient.NextInBusinessTime("desk", delays[c.EntityKey])
		if c.EntityKey != "in-tx" {
			return answer, nil
		}
		tx, err := db.Begin(ctx)
		if err != nil {
			return prescient.Answer{}, err
		}
		defer tx.Rollback(ctx)
		if _, err := c.CompleteTx(ctx, tx, answer); err != nil {
			return prescient.Answer{}, err
		}
		return prescient.Done(), tx.Commit(ctx) // not sent: the transaction settled the check
	})
	clock.Set(time.Date(2031, 9, 3, 14, 0, 0, 0, time.UTC))
	if err := worker.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	// The calendar as the test reads it: an hour of Wednesday, then Thursday from 09:00 to 12:00 in Berlin.
	if want := time.Date(2031, 9, 4, 10, 0, 0, 0, time.UTC); !businessAfter(t, clock.Now(), "4h").Equal(want) {
		t.Fatalf("4h of the desk after %s: want %s", clock.Now(), want)
	}
	for key, delay := range delays {
		want := businessAfter(t, clock.Now(), delay)
		if p, ok := pending(t, ids[key]); !ok || p.CheckCount != 1 || p.Attempts != 0 || p.ClaimedBy != nil ||
			!p.NextCheckAt.Equal(want) {
			t.Fatalf("%s: want rescheduled at %s (%s of the desk), got %+v (pending %v)", key, want, delay, p, ok)
		}
	}
}

// An answer in business time the database cannot resolve (an unknown calendar, a delay that is not one, a next
// time beside it) refuses its whole call: that check fails alone with the reason, in the worker's settlement
// and in the handler's transaction, and the other answers of the batch are settled.
func TestABadAnswerInBusinessTimeFailsItsCheckAlone(t *testing.T) {
	ctx := context.Background()
	setDeskCalendar(t)
	class := newClass(t, "businessbad")
	clock := prescienttest.NewClock(time.Date(2031, 9, 3, 13, 59, 59, 0, time.UTC))
	client := &prescient.Client{Clock: clock.Now}
	ids := map[string]int64{}
	for _, key := range []string{"done", "desk", "nowhere", "one-day", "both", "nowhere-in-tx"} {
		ids[key] = schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: key})
	}
	var mu sync.Mutex
	var calls int
	var refused error
	worker := prescient.NewWorker(db, prescient.Options{Name: "businessbad", Clock: clock.Now, Logger: testLogger(t)})
	worker.HandleBatch(class, func(ctx context.Context, checks []*prescient.Check) ([]prescient.Answer, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		answers := make([]prescient.Answer, len(checks))
		for i, c := range checks {
			switch c.EntityKey {
			case "done":
				answers[i] = prescient.Done()
			case "desk":
				answers[i] = prescient.NextInBusinessTime("desk", "4h")
			case "nowhere":
				answers[i] = prescient.NextInBusinessTime("nowhere", "4h")
			case "one-day":
				answers[i] = prescient.NextInBusinessTime("desk", "1d")
			case "both":
				answers[i] = prescient.NextInBusinessTime("desk", "4h")
				answers[i].Next = c.DueAt.Add(time.Hour)
			case "nowhere-in-tx":
				tx, err := db.Begin(ctx)
				if err != nil {
					return nil, err
				}
				defer tx.Rollback(ctx)
				_, err = c.CompleteTx(ctx, tx, prescient.NextInBusinessTime("nowhere", "4h"))
				mu.Lock()
				refused = err
				mu.Unlock()
				answers[i] = prescient.Fail(err)
			}
		}
		return answers, nil
	})
	clock.Set(time.Date(2031, 9, 3, 14, 0, 0, 0, time.UTC))
	if err := worker.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("the batch handler was called %d times, want once: the answers are to be settled together", calls)
	}
	if h, ok := history(t, ids["done"]); !ok || h.Outcome != "done" {
		t.Fatalf("done: %+v (in history %v)", h, ok)
	}
	want := businessAfter(t, clock.Now(), "4h")
	if p, ok := pending(t, ids["desk"]); !ok || p.CheckCount != 1 || p.Attempts != 0 || !p.NextCheckAt.Equal(want) {
		t.Fatalf("desk: want rescheduled at %s, got %+v (pending %v)", want, p, ok)
	}
	reasons := map[string][]string{
		"nowhere":       {"no calendar named 'nowhere'"},
		"one-day":       {"business delay '1d'"},
		"both":          {"answered both a next time and one in business time"},
		"nowhere-in-tx": {"no calendar named 'nowhere'"},
	}
	for key, want := range reasons {
		p, ok := pending(t, ids[key])
		if !ok || p.Attempts != 1 || p.CheckCount != 0 || p.LastError == nil {
			t.Fatalf("%s: want failed once, got %+v (pending %v)", key, p, ok)
		}
		for _, part := range append(want, "PR400") {
			if !strings.Contains(*p.LastError, part) {
				t.Fatalf("%s: want the refusal's reason (%q) in the check's error, got %q", key, part, *p.LastError)
			}
		}
	}
	var refusal *prescient.RefusedError
	if !errors.As(refused, &refusal) || !errors.Is(refused, prescient.ErrRefused) || refusal.CheckID != ids["nowhere-in-tx"] ||
		!strings.Contains(refusal.Reason, "no calendar named 'nowhere'") {
		t.Fatalf("CompleteTx of an unknown calendar: want a *RefusedError naming it, got %v", refused)
	}
}
