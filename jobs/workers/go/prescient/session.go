package prescient

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// The protocol's functions take at most 10 000 checks per call.
const maxPerCall = 10000

// A heartbeat extends at most this many leases per worker_extend call. It keeps the rows it extends locked
// until it ends, so a settlement of one of them waits for it. A schema before the fix of worker_extend
// (its answers are looked up by key now) compared each check with each: 2 000 cost 220 ms, and one call of
// the 2 000 checks a worker held stalled a drain's settlements for half a second. Calls of 250 keep each
// call's locks short against any schema this client may meet.
const extendPerCall = 250

// How long one database call of the worker may take before it is abandoned (and retried or left to the
// lease's expiry). The calls are not tied to Run's context: a take cancelled mid-flight could have leased
// checks whose rows the worker never read.
const callTimeout = 30 * time.Second

// How often to look again when a check is due but could not be taken (its group is busy, say): from
// busyPoll, doubling while it lasts, to maxBusyPoll.
const (
	busyPoll    = 200 * time.Millisecond
	maxBusyPoll = 3 * time.Second
)

const (
	takeSQL = `SELECT id, job, entity_name, entity_key, job_key, group_key, payload, due_at, asked_for_at,
  check_count, attempts, last_error, traceparent, tracestate, lease_token, lease_until
  FROM prescient.worker_take($1, $2, $3, $4, $5)`
	completeSQL = `SELECT id, outcome, next_check_at, last_error
  FROM prescient.worker_complete($1, $2, $3, $4, $5, p_calendar => $6, p_business_delay => $7, p_now => $8)`
	failSQL    = `SELECT id, outcome, next_check_at, last_error FROM prescient.worker_fail($1, $2, $3, $4, $5)`
	extendSQL  = `SELECT id, lease_until, refusal FROM prescient.worker_extend($1, $2, $3, $4, $5)`
	releaseSQL = `SELECT prescient.worker_release($1, $2, $3)`
	nextDueSQL = `SELECT prescient.worker_next_due($1, $2), coalesce($2::timestamptz, clock_timestamp())`
)

// session is one Run: the checks it holds, the goroutines that run and settle them.
type session struct {
	w           *Worker
	classes     []string
	drain       bool
	batchesOnly bool // every class has a batch handler: a free place starts up to BatchSize checks at once

	busyDelay time.Duration // the current look-again delay for a due check not taken (loop's goroutine)

	handedOver chan struct{} // (1) answers wait in unsettled for the settler
	progress   chan struct{} // (1) a handler finished or a settlement was written
	wake       chan struct{} // (1) a notification for one of the classes
	started    chan struct{} // (1) checks taken: the heartbeat, asleep while none is held, ticks again

	mu       sync.Mutex
	held     map[lease]*heldCheck // leased to this session and not settled or released
	queue    []*Check             // taken, waiting for a place, in the order taken
	runners  int                  // goroutines running the queue's checks: at most Concurrency
	busy     int                  // of them, those in a handler call now
	perCheck time.Duration        // the handlers' mean time per check so far (0: none has finished)

	// The handlers' answers waiting for the settler, which takes them all at once: each handler call hands its
	// answers over together (handOver), waiting on settlerTook while more than maxUnsettled wait already.
	unsettled   []answer
	settlerDone bool // the settler is gone: answers handed over now are dropped

	maxUnsettled int
	settlerTook  *sync.Cond // on mu: the settler took the unsettled answers, or is gone

	handlers       sync.WaitGroup  // the runners
	handlerBase    context.Context // the handlers' contexts: Run's values, cancelled only after the grace
	cancelHandlers context.CancelFunc
	settlerStop    chan struct{}
	settlerGone    chan struct{}
}

// lease names a check held under a token: the same check may be held twice, when its lease expired while its
// handler ran and a take of this worker got it again.
type lease struct{ id, token int64 }

func leaseOf(c *Check) lease { return lease{c.ID, c.token} }

// checkState is where a held check is: waiting for a place, running, answered (being settled), or settling in
// its handler's transaction. The heartbeat extends the leases of the queued and the running ones.
type checkState int

const (
	queued checkState = iota
	running
	answered
	settlingInTx
)

type heldCheck struct {
	check    *Check
	take     *take
	state    checkState
	cancel   context.CancelFunc // the handler's context, once it runs (a batch's: a no-op, see runBatch)
	released bool               // given back (at the stop) or lost (a heartbeat): not run, its answer dropped
}

// answer is a handler's answer, on its way to a settlement.
type answer struct {
	check          *Check
	next           time.Time
	inBusinessTime *businessDelay
	result         json.RawMessage
	err            error       // the handler failed: worker_fail with its text
	settled        *Settlement // settled in the handler's transaction (CompleteTx, FailTx): nothing to send
	lastOfTake     bool        // the last answer of its take: flush without waiting for FlushDelay
}

// take is one worker_take call's checks, counted down (under the session's mu) as their handlers finish.
type take struct{ unanswered int }

func newSession(w *Worker, ctx context.Context, drain bool) *session {
	s := &session{
		w:       w,
		classes: w.classes(),
		drain:   drain,
		// Room for every answer a take's checks may give while a settlement is on its way: a handler never
		// waits for the settler unless settlements fall behind the takes.
		maxUnsettled: w.opts.Concurrency + w.opts.BatchSize,
		batchesOnly:  len(w.handlers) == 0,
		handedOver:   make(chan struct{}, 1),
		progress:     make(chan struct{}, 1),
		wake:         make(chan struct{}, 1),
		started:      make(chan struct{}, 1),
		held:         map[lease]*heldCheck{},
		settlerStop:  make(chan struct{}),
		settlerGone:  make(chan struct{}),
	}
	s.settlerTook = sync.NewCond(&s.mu)
	s.handlerBase, s.cancelHandlers = context.WithCancel(detached{ctx})
	return s
}

// now is p_now: the pinned clock, or NULL (the database's clock).
func (s *session) now() interface{} {
	if s.w.opts.Clock == nil {
		return nil
	}
	return s.w.opts.Clock()
}

func (s *session) callContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), callTimeout)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// loop takes checks while ctx lasts: what the worker can start soon (wanted), then, when the take came back
// short (nothing more is due), sleeps until the next due time or a notification.
func (s *session) loop(ctx context.Context) error {
	retry := backoff{}
	for ctx.Err() == nil {
		n := s.wanted(ctx)
		if n == 0 {
			break
		}
		checks, err := s.take(n)
		if err != nil {
			if isRefusal(err) {
				return refusal("take", 0, err)
			}
			delay := retry.next()
			s.w.log.Warn("take failed, trying again", "delay", delay, "error", err)
			sleep(ctx, delay)
			continue
		}
		retry.reset()
		if len(checks) > 0 {
			s.busyDelay = 0
		}
		s.enqueue(checks)
		switch {
		case len(checks) == n:
			// The take got all it asked for: more may be due.
		case s.drain && len(checks) > 0:
		case s.drain:
			if s.heldCount() == 0 {
				return nil
			}
			select { // a settlement may free a group's next check, or a rescheduled one
			case <-s.progress:
			case <-ctx.Done():
			}
		default:
			s.idle(ctx)
		}
	}
	return nil
}

// wanted waits until the worker can start enough checks soon to be worth a take, and answers how many a
// take should ask for; 0: ctx is done. "Soon" is the free places (each a call of up to BatchSize for a worker
// of batch handlers only: room), and the checks the running handlers will have made room for within
// Prefetch, by their mean time per check so far (none before a handler has finished): a take of fast
// handlers asks for a batch, one of slow handlers for their free places, so a worker does not hold checks
// another worker could start sooner. At most BatchSize; less than half of what could start soon waits
// FlushDelay for more room first, so a busy queue is taken in batches.
func (s *session) wanted(ctx context.Context) int {
	var timer *time.Timer
	var timerC <-chan time.Time
	timedOut := false
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		want, soon := s.room()
		if want > 0 && (want*2 >= soon || timedOut) {
			return want
		}
		if want > 0 && timer == nil {
			timer = time.NewTimer(s.w.opts.FlushDelay)
			timerC = timer.C
		}
		select {
		case <-s.progress:
		case <-timerC:
			timedOut = true
		case <-ctx.Done():
			return 0
		}
	}
}

// room answers how many checks a take should ask for now, and how many could start soon (both at most
// BatchSize). A free place starts a check, or for a batch handler a call of up to BatchSize checks: a worker
// whose classes all have one asks for BatchSize while a place is free, its first take too.
func (s *session) room() (want, soon int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	concurrency := s.w.opts.Concurrency
	soon = concurrency - s.busy
	if s.batchesOnly && soon > 0 {
		soon = s.w.opts.BatchSize
	}
	if s.perCheck > 0 && s.w.opts.Prefetch > 0 {
		ahead := float64(concurrency) * float64(s.w.opts.Prefetch) / float64(s.perCheck)
		if ahead > float64(s.w.opts.BatchSize) {
			ahead = float64(s.w.opts.BatchSize)
		}
		soon += int(ahead)
	}
	if soon > s.w.opts.BatchSize {
		soon = s.w.opts.BatchSize
	}
	return soon - len(s.queue), soon
}

func (s *session) take(n int) ([]*Check, error) {
	ctx, cancel := s.callContext()
	defer cancel()
	rows, err := s.w.pool.Query(ctx, takeSQL, s.w.opts.Name, s.classes, n, s.w.opts.Lease.Seconds(), s.now())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	checks := make([]*Check, 0, n)
	for rows.Next() {
		c := &Check{}
		var jobKey, groupKey, lastError, traceparent, tracestate *string
		var payload []byte
		if err := rows.Scan(&c.ID, &c.Job, &c.EntityName, &c.EntityKey, &jobKey, &groupKey, &payload, &c.DueAt,
			&c.AskedForAt, &c.CheckCount, &c.Attempts, &lastError, &traceparent, &tracestate, &c.token,
			&c.LeaseUntil); err != nil {
			return nil, err
		}
		c.JobKey, c.GroupKey, c.LastError, c.Payload = deref(jobKey), deref(groupKey), deref(lastError), payload
		c.Traceparent, c.Tracestate = deref(traceparent), deref(tracestate)
		checks = append(checks, c)
	}
	if err := rows.Err(); err != nil {
		// The take's transaction failed as a whole: nothing is leased.
		return nil, err
	}
	if s.w.opts.Verbose && len(checks) > 0 {
		s.w.log.Debug("took checks", "count", len(checks), "checks", idList(checks))
	}
	return checks, nil
}

func (s *session) heldCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

// idle sleeps until the next due time (at most MaxSleep), a notification, or the stop.
func (s *session) idle(ctx context.Context) {
	ctx2, cancel := s.callContext()
	var next *time.Time
	var now time.Time
	err := s.w.pool.QueryRow(ctx2, nextDueSQL, s.classes, s.now()).Scan(&next, &now)
	cancel()
	d := s.w.opts.MaxSleep
	var progress chan struct{}
	switch {
	case err != nil:
		s.w.log.Warn("next due failed, looking again", "delay", time.Second, "error", err)
		d = time.Second
	case next == nil:
	case !next.After(now):
		// Due, yet not taken: a group busy with another check, or held by a lease ending now. A settlement
		// of ours may free it: look again then, or soon (less often while it lasts).
		if s.busyDelay = 2 * s.busyDelay; s.busyDelay < busyPoll {
			s.busyDelay = busyPoll
		} else if s.busyDelay > maxBusyPoll {
			s.busyDelay = maxBusyPoll
		}
		d, progress = s.busyDelay, s.progress
	case next.Sub(now) < d:
		d = next.Sub(now)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-s.wake:
	case <-progress:
	case <-timer.C:
	}
}

// stop: the checks not started yet are given back at once; the handlers still running get the grace, and
// those not done by then are given back too.
func (s *session) stop() {
	if ids, tokens := s.markReleased(queued); len(ids) > 0 {
		s.release(ids, tokens, "not started")
	}
	done := make(chan struct{})
	go func() {
		s.handlers.Wait()
		close(done)
	}()
	if n := s.count(running); n > 0 {
		s.w.log.Info("stopping: waiting for the running checks", "running", n, "grace", s.w.opts.Grace)
	}
	grace := time.NewTimer(s.w.opts.Grace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		// Marked before the cancel, so a handler returning on the cancel is not counted as failed.
		ids, tokens := s.markReleased(running)
		s.cancelHandlers()
		s.release(ids, tokens, "still running after the grace")
	}
	close(s.settlerStop)
	<-s.settlerGone
	s.cancelHandlers()
}

func (s *session) count(state checkState) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.held {
		if h.state == state {
			n++
		}
	}
	return n
}

// markReleased lets go of the checks in the state (their answers, if any come, are dropped).
func (s *session) markReleased(state checkState) (ids, tokens []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for l, h := range s.held {
		if h.state == state {
			h.released = true
			ids, tokens = append(ids, l.id), append(tokens, l.token)
			delete(s.held, l)
		}
	}
	if state == queued {
		s.queue = nil
	}
	return ids, tokens
}

func (s *session) release(ids, tokens []int64, why string) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := s.callContext()
	defer cancel()
	var n int
	if err := s.w.pool.QueryRow(ctx, releaseSQL, s.w.opts.Name, ids, tokens).Scan(&n); err != nil {
		s.w.log.Warn("release failed: the leases will expire", "checks", joinIDs(ids), "reason", why, "error", err)
		return
	}
	s.w.log.Info("checks given back", "checks", joinIDs(ids), "reason", why, "released", n)
}

// heartbeatLoop extends the leases of every check held, every lease/3 (extend). While no check is held
// it does not tick at all, until checks are taken: a worker waiting for its slot wakes for nothing (a tick every
// lease/3 was most of an idle worker's CPU, 16 ms a minute with 2 s leases).
func (s *session) heartbeatLoop(stop chan struct{}) {
	ticker := time.NewTicker(s.w.opts.Lease / 3)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ticker.C:
			if s.extend() > 0 {
				continue
			}
			ticker.Stop()
			select {
			case <-stop:
				return
			case <-s.started:
			}
			ticker.Reset(s.w.opts.Lease / 3)
		}
	}
}

// extend covers the checks waiting for a place and those whose handlers run: an answered one is being
// settled, by the settler or in its handler's transaction (and extending it too would lock its row against
// the settlement). In id order, the order a settlement locks in, so the two never deadlock; in calls of at
// most extendPerCall. Answers how many it covered.
func (s *session) extend() int {
	s.mu.Lock()
	unanswered := make([]lease, 0, len(s.held))
	for l, h := range s.held {
		if h.state == queued || h.state == running {
			unanswered = append(unanswered, l)
		}
	}
	s.mu.Unlock()
	sort.Slice(unanswered, func(i, j int) bool { return unanswered[i].id < unanswered[j].id })
	ids, tokens := make([]int64, len(unanswered)), make([]int64, len(unanswered))
	for i, l := range unanswered {
		ids[i], tokens[i] = l.id, l.token
	}
	extended := len(ids)
	for len(ids) > 0 {
		n := len(ids)
		if n > extendPerCall {
			n = extendPerCall
		}
		s.extendSome(ids[:n], tokens[:n])
		ids, tokens = ids[n:], tokens[n:]
	}
	return extended
}

func (s *session) extendSome(ids, tokens []int64) {
	ctx, cancel := s.callContext()
	defer cancel()
	rows, err := s.w.pool.Query(ctx, extendSQL, s.w.opts.Name, ids, tokens, s.w.opts.Lease.Seconds(), s.now())
	if err != nil {
		s.w.log.Warn("heartbeat failed", "checks", joinIDs(ids), "error", err)
		return
	}
	defer rows.Close()
	for i := 0; rows.Next(); i++ { // one row per check, in the order given
		var id int64
		var until *time.Time
		var refusal *string
		if err := rows.Scan(&id, &until, &refusal); err != nil {
			s.w.log.Warn("heartbeat failed", "error", err)
			return
		}
		if refusal == nil || i >= len(ids) {
			continue
		}
		s.mu.Lock()
		h := s.held[lease{ids[i], tokens[i]}]
		state := answered
		if h != nil {
			state = h.state
		}
		switch state {
		case running:
			h.cancel() // its settlement would be refused: stop working on it
		case queued: // not to be run
			h.released = true
			delete(s.held, leaseOf(h.check))
		}
		s.mu.Unlock()
		switch state {
		case running:
			s.w.log.Warn("lease lost, the handler is cancelled", "check", id, "reason", *refusal)
		case queued:
			s.w.log.Warn("lease lost before it started, not run", "check", id, "reason", *refusal)
		}
	}
	if err := rows.Err(); err != nil {
		s.w.log.Warn("heartbeat failed", "checks", joinIDs(ids), "error", err)
	}
}

// backoff is the wait between attempts after a failed call: the first try again at once (a failover leaves
// the pool's sessions stale while a new one would work), then 250 ms doubling to 1 s, so that the first try
// after a new leader is elected comes within 1 s of it, whatever the election took (docs/operations.md,
// "High availability").
type backoff struct {
	failures int
	last     time.Duration
}

func (b *backoff) next() time.Duration {
	switch {
	case b.failures == 0:
		b.last = 0
	case b.last == 0:
		b.last = 250 * time.Millisecond
	case b.last < time.Second:
		b.last *= 2
	}
	b.failures++
	return b.last
}

func (b *backoff) reset() { *b = backoff{} }

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// detached keeps a context's values but not its cancellation: handlers outlive Run's context by the grace.
type detached struct{ parent context.Context }

func (detached) Deadline() (time.Time, bool)         { return time.Time{}, false }
func (detached) Done() <-chan struct{}               { return nil }
func (detached) Err() error                          { return nil }
func (d detached) Value(key interface{}) interface{} { return d.parent.Value(key) }

func idList(checks []*Check) string {
	ids := make([]int64, len(checks))
	for i, c := range checks {
		ids[i] = c.ID
	}
	return joinIDs(ids)
}

func joinIDs(ids []int64) string {
	const shown = 20
	parts := make([]string, 0, shown+1)
	for i, id := range ids {
		if i == shown {
			parts = append(parts, fmt.Sprintf("... (%d in all)", len(ids)))
			break
		}
		parts = append(parts, fmt.Sprint(id))
	}
	return strings.Join(parts, ",")
}
