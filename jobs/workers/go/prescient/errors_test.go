package prescient_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
)

// Each kind of refusal matches its sentinel with errors.Is, and only its own, also wrapped by the caller.
func TestRefusalsMatchTheirSentinels(t *testing.T) {
	ctx := context.Background()
	class := newClass(t, "sentinels")
	var client prescient.Client
	request := prescient.ScheduleRequest{Job: class, EntityName: "order", EntityKey: "1", JobKey: class + ":1"}
	if _, err := client.Schedule(ctx, db, request); err != nil {
		t.Fatal(err)
	}
	_, conflict := client.Schedule(ctx, db, request)
	_, refused := client.Schedule(ctx, db, prescient.ScheduleRequest{Job: "no_such_class", EntityName: "order",
		EntityKey: "1"})
	_, notFound := prescient.Retry(ctx, db, 987654321)
	kinds := []error{prescient.ErrRefused, prescient.ErrNotFound, prescient.ErrConflict, prescient.ErrLeaseLost}
	for _, c := range []struct {
		what string
		err  error
		kind error
	}{
		{"an unknown class (PR400)", refused, prescient.ErrRefused},
		{"a retry of a check never failed (PR404)", notFound, prescient.ErrNotFound},
		{"a pending job key (PR409)", conflict, prescient.ErrConflict},
		{"a lease lost", &prescient.LeaseLostError{CheckID: 1, Reason: "expired"}, prescient.ErrLeaseLost},
	} {
		wrapped := fmt.Errorf("placing the order: %w", c.err)
		for _, kind := range kinds {
			if got := errors.Is(wrapped, kind); got != (kind == c.kind) {
				t.Errorf("%s: %v: errors.Is(%v) = %v", c.what, c.err, kind, got)
			}
		}
	}
}
