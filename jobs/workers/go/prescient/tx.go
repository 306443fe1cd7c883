package prescient

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v4"
)

// Settling in the handler's own transaction (effects exactly once): the settlement is written by the
// handler's transaction, so it commits or rolls back with the handler's writes. The row the settlement
// locks keeps every other worker's take off the check until that transaction ends (takes skip locked rows).
const (
	completeTxSQL = `SELECT id, outcome, next_check_at, last_error, pg_current_xact_id()::text
  FROM prescient.worker_complete($1, $2, $3, $4, $5, p_calendar => $6, p_business_delay => $7, p_now => $8)`
	failTxSQL = `SELECT id, outcome, next_check_at, last_error, pg_current_xact_id()::text
  FROM prescient.worker_fail($1, $2, $3, $4, $5)`
	// What became of a transaction that settled a check in a handler that then returned an error.
	xactStatusSQL = `SELECT pg_xact_status($1::xid8)`
)

// txSettlement is what the worker knows of a check settled in a handler's transaction: the latest such
// settlement (a handler may retry its transaction) and the transaction that wrote it.
type txSettlement struct {
	mu         sync.Mutex
	worker     string
	now        func() interface{}
	onSettling func() // the worker stops extending the check's lease: its row is the transaction's now
	settled    bool   // a settlement was written in a transaction (committed or not: see xact)
	lost       bool   // the settlement answered lease_lost: the check is not this worker's any more
	settlement Settlement
	xact       string // the transaction's id (xid8), to ask whether it committed
}

// CompleteTx answers the check (done, look again at a.Next, or in business time: NextInBusinessTime) in tx,
// the handler's own transaction on the application's database, so the handler's writes and the settlement
// commit or roll back together. Commit tx, then return from the handler (its Answer is then ignored: the
// check is settled). If the lease was lost meanwhile, CompleteTx returns the Settlement with a
// *LeaseLostError, nothing is settled, and the handler must roll tx back (return the error, and a deferred
// tx.Rollback does it): another worker runs the check. A refusal (a result over 64 KiB, an unknown calendar,
// say) is a *RefusedError, and tx is then aborted. If tx rolls back after a CompleteTx that succeeded, the
// check is still leased: a handler error fails it (the normal path), a nil one leaves it to its lease's end
// (then it runs again).
func (c *Check) CompleteTx(ctx context.Context, tx pgx.Tx, a Answer) (Settlement, error) {
	if a.err != nil {
		return c.FailTx(ctx, tx, a.err)
	}
	var next *time.Time
	if !a.Next.IsZero() {
		next = &a.Next
	}
	var results [][]byte
	if a.Result != nil {
		results = [][]byte{a.Result}
	}
	var calendars, delays []string // NULL unless the answer is in business time, as the worker's settlement sends
	if b := a.inBusinessTime; b != nil {
		calendars, delays = []string{b.calendar}, []string{b.delay}
	}
	return c.settleTx(ctx, tx, "complete", completeTxSQL, []*time.Time{next}, results, calendars, delays)
}

// FailTx answers the check with an error in tx, the handler's own transaction (the class's retries and
// backoff decide what follows), as CompleteTx does for a completion.
func (c *Check) FailTx(ctx context.Context, tx pgx.Tx, cause error) (Settlement, error) {
	if cause == nil {
		return Settlement{}, fmt.Errorf("prescient: check %d: FailTx needs an error", c.ID)
	}
	return c.settleTx(ctx, tx, "fail", failTxSQL, []string{storableText(cause.Error())})
}

func (c *Check) settleTx(ctx context.Context, tx pgx.Tx, op, sql string, answer ...interface{}) (Settlement, error) {
	link := c.tx
	if link == nil {
		return Settlement{}, fmt.Errorf("prescient: check %d: %s in a transaction: the check was not taken by a worker", c.ID, op)
	}
	link.mu.Lock()
	defer link.mu.Unlock()
	if link.lost {
		return link.settlement, link.settlement.Err
	}
	link.onSettling()
	args := append([]interface{}{link.worker, []int64{c.ID}, []int64{c.token}}, answer...)
	args = append(args, link.now())
	st := Settlement{Job: c.Job}
	var next *time.Time
	var lastError *string
	var xact string
	err := tx.QueryRow(ctx, sql, args...).Scan(&st.CheckID, &st.Outcome, &next, &lastError, &xact)
	if err != nil {
		return Settlement{}, refusal(op, c.ID, err)
	}
	st.NextCheckAt, st.LastError = derefTime(next), deref(lastError)
	switch st.Outcome {
	case "lease_lost":
		st.Err = &LeaseLostError{CheckID: c.ID, Reason: st.LastError}
		link.lost, link.settlement = true, st
		return st, st.Err
	case "refused": // nothing written: the check stays leased to this worker
		return st, fmt.Errorf("prescient: check %d: %s refused by the database: %s", c.ID, op, st.LastError)
	}
	link.settled, link.settlement, link.xact = true, st, xact
	return st, nil
}

// inTx is what the worker does with a check once its handler returned: settled (in a transaction that
// committed, or one the worker cannot tell from committed: the handler returned no error), lost (the
// settlement was refused), or nothing (settle the handler's answer as usual).
func (s *session) inTx(c *Check, handlerErr error) (st Settlement, settled bool) {
	link := c.tx
	link.mu.Lock()
	defer link.mu.Unlock()
	switch {
	case link.lost:
		return link.settlement, true
	case !link.settled:
		return Settlement{}, false
	case handlerErr == nil:
		return link.settlement, true
	}
	// The handler failed after settling: its transaction committed (the check is settled) or rolled back
	// (it is still leased: fail it). The database knows which.
	ctx, cancel := s.callContext()
	defer cancel()
	var status *string
	if err := s.w.pool.QueryRow(ctx, xactStatusSQL, link.xact).Scan(&status); err != nil {
		s.w.log.Warn("the handler failed after settling in its transaction, whose fate is unknown: failing the check "+
			"(refused if that transaction committed)", "check", c.ID, "job", c.Job, "error", err)
		return Settlement{}, false
	}
	if status != nil && *status == "committed" {
		s.w.log.Warn("the handler returned an error after its transaction settled the check: settled as that "+
			"transaction said", "check", c.ID, "job", c.Job, "outcome", link.settlement.Outcome, "error", handlerErr)
		return link.settlement, true
	}
	return Settlement{}, false
}
