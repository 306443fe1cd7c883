package prescient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// A take's checks wait in the session's queue, in the order taken, for a place: at most Concurrency runners
// take them from its head, one check per handler call, or for a batch handler the queued checks of its
// class, at most BatchSize, in one call.

// How much the handlers' mean time per check follows the latest call: 1/8 (a moving average).
const perCheckWeight = 8

// enqueue holds the checks taken and starts runners for them, up to Concurrency.
func (s *session) enqueue(checks []*Check) {
	if len(checks) == 0 {
		return
	}
	t := &take{unanswered: len(checks)}
	s.mu.Lock()
	for _, c := range checks {
		h := &heldCheck{check: c, take: t, state: queued}
		s.held[leaseOf(c)] = h
		c.tx = &txSettlement{worker: s.w.opts.Name, now: s.now, onSettling: func() { s.settlingInTx(h) }}
	}
	s.queue = append(s.queue, checks...)
	start := s.w.opts.Concurrency - s.runners
	if start > len(s.queue) {
		start = len(s.queue)
	}
	s.runners += start
	s.mu.Unlock()
	s.handlers.Add(start)
	for i := 0; i < start; i++ {
		go s.runner()
	}
	signal(s.started)
}

// runner runs the queue's checks until it is empty.
func (s *session) runner() {
	defer s.handlers.Done()
	for {
		ctx, cancel, checks, batchHandler := s.next()
		if len(checks) == 0 {
			return
		}
		began := time.Now()
		var answers []answer
		if batchHandler != nil {
			answers = s.runBatch(ctx, batchHandler, checks)
		} else {
			answers = []answer{s.runOne(ctx, checks[0])}
		}
		cancel()
		s.finished(len(checks), time.Since(began))
		s.handOver(answers)
		signal(s.progress)
	}
}

// next takes the queue's next check (and for a batch handler, the queued checks of its class), marks them
// running and makes the handler's context: a check's own, which a heartbeat that finds its lease lost
// cancels, or a batch's, which it does not (the others' work goes on; that check's answer is refused,
// lease_lost). None: the queue is empty and the runner ends.
func (s *session) next() (context.Context, context.CancelFunc, []*Check, BatchHandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) > 0 {
		c := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		if h := s.held[leaseOf(c)]; h == nil || h.released {
			continue
		}
		batch := []*Check{c}
		batchHandler := s.w.batchHandlers[c.Job]
		if batchHandler != nil {
			rest := s.queue[:0]
			for _, other := range s.queue {
				if other.Job == c.Job && len(batch) < s.w.opts.BatchSize {
					if h := s.held[leaseOf(other)]; h != nil && !h.released {
						batch = append(batch, other)
					}
					continue
				}
				rest = append(rest, other)
			}
			for i := len(rest); i < len(s.queue); i++ {
				s.queue[i] = nil
			}
			s.queue = rest
		}
		ctx, cancel := context.WithCancel(s.handlerBase)
		for _, c := range batch {
			h := s.held[leaseOf(c)]
			h.state, h.cancel = running, cancel
			if batchHandler != nil {
				h.cancel = func() {}
			}
		}
		s.busy++
		return ctx, cancel, batch, batchHandler
	}
	s.runners--
	return nil, nil, nil, nil
}

// finished frees the place and learns the handlers' time per check.
func (s *session) finished(checks int, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy--
	perCheck := took / time.Duration(checks)
	if perCheck <= 0 {
		perCheck = 1
	}
	if s.perCheck == 0 {
		s.perCheck = perCheck
	} else {
		s.perCheck += (perCheck - s.perCheck) / perCheckWeight
	}
}

// runOne runs a check's handler; a panic fails the check alone.
func (s *session) runOne(ctx context.Context, c *Check) (a answer) {
	a.check = c
	defer func() {
		if r := recover(); r != nil {
			a.err = fmt.Errorf("panic: %v", r)
			s.w.log.Error("the handler panicked", "check", c.ID, "job", c.Job, "panic", r)
		}
	}()
	handler := s.w.handlers[c.Job]
	if handler == nil { // the take named only the handlers' classes
		a.err = fmt.Errorf("no handler for job class %q", c.Job)
		return a
	}
	a.set(handler(ctx, c))
	return a
}

// runBatch runs a batch handler on checks of its class; an error, a panic or answers of another number fail
// them all.
func (s *session) runBatch(ctx context.Context, handler BatchHandlerFunc, checks []*Check) (answers []answer) {
	answers = make([]answer, len(checks))
	for i, c := range checks {
		answers[i].check = c
	}
	failAll := func(err error) {
		for i := range answers {
			answers[i].err = err
		}
	}
	defer func() {
		if r := recover(); r != nil {
			failAll(fmt.Errorf("panic: %v", r))
			s.w.log.Error("the batch handler panicked", "checks", idList(checks), "job", checks[0].Job, "panic", r)
		}
	}()
	got, err := handler(ctx, checks)
	switch {
	case err != nil:
		failAll(err)
	case len(got) != len(checks):
		failAll(fmt.Errorf("the batch handler answered %d of its %d checks", len(got), len(checks)))
	default:
		for i := range answers {
			answers[i].set(got[i], nil)
		}
	}
	return answers
}

// set is what a handler's return makes of the answer.
func (a *answer) set(ans Answer, err error) {
	switch {
	case err != nil:
		a.err = err
	case ans.err != nil:
		a.err = ans.err
	case ans.Result != nil && !json.Valid(ans.Result):
		a.err = errors.New("the handler's result is not valid JSON")
	default:
		a.next, a.inBusinessTime, a.result = ans.Next, ans.inBusinessTime, ans.Result
	}
}

// handOver gives a handler call's answers to the settler, all at once, but those of checks given back
// meanwhile. A batch handler's answers are marked answered together and reach the settler together, for one
// lock and one wake-up: they share a settlement, and the heartbeat does not extend the leases of checks
// already answered. (Handed over one by one through a channel, they trickled to the settler while it was
// busy: a call's answers were split between settlements, and those still waiting counted as running, so a
// heartbeat extended them, locking rows the next settlement then waited for.) While more than maxUnsettled
// answers wait for the settler, it waits for the settler to take them, as a full channel made it wait:
// a worker whose settlements fall behind stops running checks rather than hold more than it can settle.
func (s *session) handOver(answers []answer) {
	for i := range answers {
		if st, settled := s.inTx(answers[i].check, answers[i].err); settled {
			answers[i].settled = &st
		}
	}
	s.mu.Lock()
	kept := answers[:0]
	for _, a := range answers {
		if h := s.held[leaseOf(a.check)]; h != nil && !h.released {
			h.state = answered
			h.take.unanswered--
			a.lastOfTake = h.take.unanswered == 0
			kept = append(kept, a)
		}
	}
	for len(s.unsettled) > 0 && len(s.unsettled)+len(kept) > s.maxUnsettled && !s.settlerDone {
		s.settlerTook.Wait()
	}
	if !s.settlerDone {
		s.unsettled = append(s.unsettled, kept...)
	}
	s.mu.Unlock()
	signal(s.handedOver)
}

// settlingInTx: the handler settles its check in its own transaction, whose row lock a heartbeat would
// wait for; the lease is not extended any more (the settlement, once committed, ends it).
func (s *session) settlingInTx(h *heldCheck) {
	s.mu.Lock()
	h.state = settlingInTx
	s.mu.Unlock()
}
