package prescient_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
	"github.com/prescient-dev/prescient/jobs/workers/go/prescienttest"
)

// The seed scenario, as README.md shows it: an order unshipped three hours after it was placed gets an email,
// six hours after an escalation, and the checks stop as soon as it ships.

// placeOrder writes the order and schedules its check in one transaction: both or neither.
func placeOrder(ctx context.Context, db *pgxpool.Pool, client *prescient.Client, orderID string, placedAt time.Time) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO orders (id, placed_at) VALUES ($1, $2)`, orderID, placedAt); err != nil {
		return err
	}
	if _, err := client.Schedule(ctx, tx, prescient.ScheduleRequest{
		Job:        "order_unshipped",
		EntityName: "order",
		EntityKey:  orderID,
		At:         placedAt.Add(3 * time.Hour),
		JobKey:     "order_unshipped:" + orderID,
	}); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// orderUnshipped is the handler: nothing once the order shipped; at three hours an email (and look again at
// six); at six an escalation (and done). The email goes into the outbox (a mailer sends its rows) in the
// same transaction that answers the check: both or neither, so no email is queued twice, even when a worker
// dies mid-run (its check then runs again, and the first run left nothing).
func orderUnshipped(db *pgxpool.Pool) prescient.HandlerFunc {
	return func(ctx context.Context, check *prescient.Check) (prescient.Answer, error) {
		tx, err := db.Begin(ctx)
		if err != nil {
			return prescient.Answer{}, err
		}
		defer tx.Rollback(ctx) // a no-op after the commit
		var placedAt time.Time
		var shipped bool
		if err := tx.QueryRow(ctx, `SELECT placed_at, shipped_at IS NOT NULL FROM orders WHERE id = $1`,
			check.EntityKey).Scan(&placedAt, &shipped); err != nil {
			return prescient.Answer{}, err
		}
		answer := prescient.Done()
		if !shipped {
			what := "escalation"
			if check.AskedForAt.Before(placedAt.Add(6 * time.Hour)) {
				what, answer = "email", prescient.NextCheckAt(placedAt.Add(6*time.Hour))
			}
			if _, err := tx.Exec(ctx, `INSERT INTO outbox (order_id, what, due_at) VALUES ($1, $2, $3)`,
				check.EntityKey, what, check.DueAt); err != nil {
				return prescient.Answer{}, err
			}
		}
		// The answer, in the same transaction: a lost lease is an error, and the outbox row rolls back.
		if _, err := check.CompleteTx(ctx, tx, answer); err != nil {
			return prescient.Answer{}, err
		}
		return answer, tx.Commit(ctx)
	}
}

func TestSeedScenario(t *testing.T) {
	ctx := context.Background()
	if _, err := db.Exec(ctx, `
	  SELECT prescient.job_class_add('order_unshipped', true);
	  CREATE TABLE orders (id text PRIMARY KEY, placed_at timestamptz NOT NULL, shipped_at timestamptz);
	  CREATE TABLE outbox (order_id text, what text, due_at timestamptz, UNIQUE (order_id, what))`); err != nil {
		t.Fatal(err)
	}
	placed := time.Date(2031, 3, 4, 10, 0, 0, 0, time.UTC) // T
	clock := prescienttest.NewClock(placed)
	client := &prescient.Client{Clock: clock.Now}
	worker := prescient.NewWorker(db, prescient.Options{Name: "seed", Clock: clock.Now, Logger: testLogger(t)})
	worker.Handle("order_unshipped", orderUnshipped(db))
	outboxed := func() map[string]time.Time {
		rows, err := db.Query(ctx, `SELECT order_id || ' ' || what, due_at FROM outbox`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		sent := map[string]time.Time{}
		for rows.Next() {
			var key string
			var at time.Time
			if err := rows.Scan(&key, &at); err != nil {
				t.Fatal(err)
			}
			sent[key] = at
		}
		return sent
	}
	checkOf := func(orderID string) int64 {
		var id int64
		if err := db.QueryRow(ctx, `SELECT id FROM prescient.future_job WHERE job_key = $1
		  UNION ALL SELECT id FROM prescient.job_history WHERE job_key = $1`, "order_unshipped:"+orderID).Scan(&id); err != nil {
			t.Fatalf("the check of order %s: %v", orderID, err)
		}
		return id
	}
	drainAt := func(at time.Time) {
		clock.Set(at)
		if err := worker.Drain(ctx); err != nil {
			t.Fatalf("drain at %s: %v", at, err)
		}
	}

	if err := placeOrder(ctx, db, client, "A-1", placed); err != nil {
		t.Fatal(err)
	}
	if err := placeOrder(ctx, db, client, "B-2", placed); err != nil {
		t.Fatal(err)
	}
	a, b := checkOf("A-1"), checkOf("B-2")
	clock.Set(placed.Add(time.Hour))
	if _, err := db.Exec(ctx, `UPDATE orders SET shipped_at = $1 WHERE id = 'B-2'`, clock.Now()); err != nil {
		t.Fatal(err)
	}

	drainAt(placed.Add(3*time.Hour - time.Second)) // never early
	if sent := outboxed(); len(sent) != 0 {
		t.Fatalf("a second before three hours, outbox %v", sent)
	}

	drainAt(placed.Add(3 * time.Hour))
	if sent := outboxed(); len(sent) != 1 || !sent["A-1 email"].Equal(placed.Add(3*time.Hour)) {
		t.Fatalf("at three hours: want the email of A-1 alone, outbox %v", sent)
	}
	if p, ok := pending(t, a); !ok || !p.NextCheckAt.Equal(placed.Add(6*time.Hour)) || p.CheckCount != 1 {
		t.Fatalf("A-1's check after the email: want pending at T+6h, once checked; got %+v (pending %v)", p, ok)
	}
	if h, ok := history(t, b); !ok || h.Outcome != "done" || h.CheckCount != 1 {
		t.Fatalf("B-2, shipped at T+1h: want its check done at T+3h with nothing queued; got %+v (in history %v)", h, ok)
	}

	drainAt(placed.Add(6 * time.Hour))
	if sent := outboxed(); len(sent) != 2 || !sent["A-1 escalation"].Equal(placed.Add(6*time.Hour)) {
		t.Fatalf("at six hours: want A-1's escalation; outbox %v", sent)
	}
	if h, ok := history(t, a); !ok || h.Outcome != "done" || h.CheckCount != 2 || h.FinishedBy != "seed" {
		t.Fatalf("A-1's check after the escalation: want done after two runs by seed; got %+v (in history %v)", h, ok)
	}
}
