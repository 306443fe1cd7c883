package prescient_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
	"github.com/prescient-dev/prescient/jobs/workers/go/prescienttest"
)

type order struct {
	ID     string  `json:"order_id"`
	Amount float64 `json:"amount"`
}

// A typed handler gets each check's payload decoded into its type; a payload that does not decode fails its
// check with the decoding error, without calling the handler.
func TestATypedHandlerGetsThePayloadDecoded(t *testing.T) {
	class := newClass(t, "typed")
	clock := prescienttest.NewClock(time.Date(2031, 6, 7, 8, 0, 0, 0, time.UTC))
	client := &prescient.Client{Clock: clock.Now}
	good := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "good",
		Payload: order{ID: "A-1", Amount: 12.5}})
	bad := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "bad",
		Payload: map[string]int{"order_id": 7}})
	worker := prescient.NewWorker(db, prescient.Options{Name: "typed", Clock: clock.Now, Logger: testLogger(t)})
	var mu sync.Mutex
	seen := map[int64]order{}
	prescient.Handle(worker, class, func(ctx context.Context, c *prescient.Check, o order) (prescient.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		seen[c.ID] = o
		return prescient.Done(), nil
	})
	clock.Advance(time.Second)
	if err := worker.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[good] != (order{ID: "A-1", Amount: 12.5}) {
		t.Fatalf("the handler saw %+v, want only check %d's order A-1", seen, good)
	}
	if h, ok := history(t, good); !ok || h.Outcome != "done" {
		t.Fatalf("the good payload's check: %+v (in the history %v)", h, ok)
	}
	p, ok := pending(t, bad)
	if !ok || p.Attempts != 1 || p.LastError == nil || !strings.Contains(*p.LastError, "is not a prescient_test.order") {
		t.Fatalf("the bad payload's check: want failed with the decoding error, got %+v (pending %v)", p, ok)
	}
}

// A typed batch handler gets the checks whose payloads decode, each with its payload at its place; a payload
// that does not decode fails its check alone.
func TestATypedBatchHandlerGetsEachPayloadDecoded(t *testing.T) {
	class := newClass(t, "typedbatch")
	clock := prescienttest.NewClock(time.Date(2031, 6, 7, 9, 0, 0, 0, time.UTC))
	client := &prescient.Client{Clock: clock.Now}
	ids := map[string]int64{}
	for _, key := range []string{"A-1", "A-2"} {
		ids[key] = schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: key,
			Payload: order{ID: key, Amount: 1}})
	}
	bad := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "bad",
		Payload: map[string]bool{"amount": true}})
	worker := prescient.NewWorker(db, prescient.Options{Name: "typedbatch", Clock: clock.Now, Logger: testLogger(t)})
	var mu sync.Mutex
	seen := map[int64]order{}
	prescient.HandleBatch(worker, class, func(ctx context.Context, checks []*prescient.Check,
		orders []order) ([]prescient.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		answers := make([]prescient.Answer, len(checks))
		for i, c := range checks {
			seen[c.ID] = orders[i]
			answers[i] = prescient.Done()
		}
		return answers, nil
	})
	clock.Advance(time.Second)
	if err := worker.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[ids["A-1"]].ID != "A-1" || seen[ids["A-2"]].ID != "A-2" {
		t.Fatalf("the handler saw %+v, want A-1 and A-2 each with its own payload", seen)
	}
	for _, key := range []string{"A-1", "A-2"} {
		if h, ok := history(t, ids[key]); !ok || h.Outcome != "done" {
			t.Fatalf("%s: %+v (in the history %v)", key, h, ok)
		}
	}
	p, ok := pending(t, bad)
	if !ok || p.Attempts != 1 || p.LastError == nil || !strings.Contains(*p.LastError, "is not a prescient_test.order") {
		t.Fatalf("the bad payload's check: want failed with the decoding error, got %+v (pending %v)", p, ok)
	}
}
