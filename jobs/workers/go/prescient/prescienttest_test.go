package prescient_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgconn"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
	"github.com/prescient-dev/prescient/jobs/workers/go/prescienttest"
)

func TestTheTestClockIsSetAndMovedByTheTest(t *testing.T) {
	start := time.Date(2031, 3, 4, 10, 0, 0, 0, time.UTC)
	clock := prescienttest.NewClock(start)
	if !clock.Now().Equal(start) {
		t.Fatalf("a new clock: %s", clock.Now())
	}
	if got := clock.Advance(3 * time.Hour); !got.Equal(start.Add(3*time.Hour)) || !clock.Now().Equal(got) {
		t.Fatalf("advanced three hours: %s, now %s", got, clock.Now())
	}
	clock.Set(start)
	// Read by a worker's goroutines while the test moves it (go test -race finds a missing lock).
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				clock.Now()
			}
		}()
	}
	for j := 0; j < 100; j++ {
		clock.Advance(time.Second)
	}
	wg.Wait()
	if !clock.Now().Equal(start.Add(100 * time.Second)) {
		t.Fatalf("after 100 advances of a second: %s", clock.Now())
	}
}

// A worker's pinned clock is refused until AllowPinnedClock, then taken: in a transaction rolled back, so the
// tests that run meanwhile keep the database's setting.
func TestAllowPinnedClockLetsAWorkerPinTheClock(t *testing.T) {
	ctx := context.Background()
	class := newClass(t, "pinned")
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the setting as it was
	if _, err := tx.Exec(ctx, "UPDATE prescient.settings SET workers_may_pin_clock = false"); err != nil {
		t.Fatal(err)
	}
	take := func(q prescient.Querier) error {
		var n int
		return q.QueryRow(ctx, "SELECT count(*) FROM prescient.worker_take('pinned', ARRAY[$1], 1, 1, $2)", class,
			time.Date(2031, 3, 4, 10, 0, 0, 0, time.UTC)).Scan(&n)
	}
	refused, err := tx.Begin(ctx) // a savepoint
	if err != nil {
		t.Fatal(err)
	}
	var pgErr *pgconn.PgError
	if err := take(refused); !errors.As(err, &pgErr) || pgErr.Code != "PR400" {
		t.Fatalf("a pinned clock on a database that does not allow it: want PR400, got %v", err)
	}
	if err := refused.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := prescienttest.AllowPinnedClock(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if err := take(tx); err != nil {
		t.Fatalf("a pinned clock once allowed: %v", err)
	}
}
