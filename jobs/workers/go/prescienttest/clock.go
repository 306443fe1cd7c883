// Package prescienttest helps an application test its prescient code against a real database with time
// pinned: a Clock the test moves, whose Now is a prescient.Client's Clock and a worker's Options.Clock, and
// the test database's setting that lets workers pin the clock.
//
//	clock := prescienttest.NewClock(time.Date(2031, 3, 4, 10, 0, 0, 0, time.UTC))
//	client := &prescient.Client{Clock: clock.Now}
//	worker := prescient.NewWorker(pool, prescient.Options{Clock: clock.Now})
//	// ... schedule a check three hours ahead, then:
//	clock.Advance(3 * time.Hour)
//	err := worker.Drain(ctx) // runs what is due at the pinned time
package prescienttest

import (
	"context"
	"sync"
	"time"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
)

// Clock is a pinned time the test sets or moves; safe for concurrent use (a worker's goroutines read it).
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock is a clock pinned at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now is the pinned time: pass the method value as prescient.Client.Clock and prescient.Options.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set pins the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Advance moves the clock by d and answers the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// AllowPinnedClock lets workers pin the clock on q's database (prescient.settings.workers_may_pin_clock;
// docs/workers.md, "What a worker may do"), which only the schema's owner may set: for a test database,
// never a production one, where a worker's pinned clock is refused (prescient.ErrRefused).
func AllowPinnedClock(ctx context.Context, q prescient.Querier) error {
	_, err := q.Exec(ctx, `UPDATE prescient.settings SET workers_may_pin_clock = true`)
	return err
}
