package prescient

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Check is one due check, as a handler sees it.
type Check struct {
	ID         int64
	Job        string // the job class
	EntityName string
	EntityKey  string
	JobKey     string          // "" when the check has none
	GroupKey   string          // "" when the check has none
	Payload    json.RawMessage // the JSON the check was scheduled with
	DueAt      time.Time       // the slot boundary it became due at
	AskedForAt time.Time       // the time it was asked for, before rounding up to the slot
	CheckCount int             // runs answered before this one
	Attempts   int             // failed attempts before this one
	LastError  string          // the previous attempt's error, "" when none
	LeaseUntil time.Time       // when the lease ends unless extended (the worker extends it while the handler runs)

	// Traceparent and Tracestate: for a check scheduled with a trace context, its trace with a span id of this
	// run's own (each attempt is a span), the parent of the handler's work; "" otherwise.
	Traceparent string
	Tracestate  string

	token int64         // the fencing token the lease was given under
	tx    *txSettlement // what CompleteTx and FailTx settled in the handler's transaction
}

// Answer is what a handler makes of a check: look again at Next, or in business time (NextInBusinessTime),
// or (neither) done, keeping Result in the history.
type Answer struct {
	Next           time.Time       // zero: the check is done, unless the answer is in business time
	Result         json.RawMessage // kept in the history's result column when done (valid JSON, at most 64 KiB); nil: none
	inBusinessTime *businessDelay  // NextInBusinessTime's: the database resolves it to a time
	err            error           // Fail's error: the check failed
}

// businessDelay is an answer in business time: delay of calendar's open time, counted from the database's now.
type businessDelay struct{ calendar, delay string }

// Done ends the check.
func Done() Answer { return Answer{} }

// DoneWithResult ends the check and keeps result (any JSON value) in its history row.
func DoneWithResult(result json.RawMessage) Answer { return Answer{Result: result} }

// Fail fails the check with err's text (the class's retries and backoff decide what follows): a batch
// handler's answer for one check that failed.
func Fail(err error) Answer {
	if err == nil {
		err = errors.New("failed (no error given)")
	}
	return Answer{err: err}
}

// NextCheckAt asks the database to run the check again at t (rounded up to the slot grid; a time not after
// the time this run was asked for ends it with the guard_past outcome).
func NextCheckAt(t time.Time) Answer { return Answer{Next: t} }

// NextInBusinessTime asks the database to run the check again after delay of calendar's open time ("4h",
// "90m", "1h30m", "3bd": docs/business-time.md), counted from the time the answer is settled and then judged
// as NextCheckAt's time is. The database resolves it, so the calendar is the one it has then. An unknown
// calendar, a delay that is not one or a Next set beside it fails the check alone with the reason (from
// CompleteTx: a *RefusedError).
func NextInBusinessTime(calendar, delay string) Answer {
	return Answer{inBusinessTime: &businessDelay{calendar: calendar, delay: delay}}
}

// HandlerFunc runs one check. An error (or a panic) fails the check alone, with the error's text; the
// class's retries and backoff decide what follows. ctx is cancelled when the check's lease is lost or when
// the worker's grace period after a stop is over. A handler that settled its check in its own transaction
// (CompleteTx, FailTx) has its returned Answer ignored.
type HandlerFunc func(ctx context.Context, check *Check) (Answer, error)

// BatchHandlerFunc runs many checks of its class in one call (at most Options.BatchSize): it answers each,
// one Answer per check in the order given (Fail(err) for a check that failed). An error (or a panic, or
// answers of another number) fails every check of the call with its text. ctx is cancelled when the worker's
// grace period after a stop is over (a lease lost meanwhile is not: that check's answer is refused).
type BatchHandlerFunc func(ctx context.Context, checks []*Check) ([]Answer, error)

// Settlement is what the database made of one answer (docs/workers.md, complete and fail).
type Settlement struct {
	CheckID     int64
	Job         string
	Outcome     string    // rescheduled, retried, lease_lost, or a history outcome (docs/runner.md#how-a-check-ends)
	NextCheckAt time.Time // when rescheduled or retried
	LastError   string    // the error kept, or why a guard ended it, or why the lease was lost
	Err         error     // a *LeaseLostError when Outcome is lease_lost, nil otherwise
}
