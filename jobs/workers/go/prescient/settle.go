package prescient

import (
	"context"
	"sort"
	"time"

	"github.com/jackc/pgx/v4"
)

// settleLoop gathers the handlers' answers and settles them in batches: when a take's last answer is in,
// BatchSize answers wait, or FlushDelay after the first answer waiting, whichever comes first. The
// completions and the failures of a batch go to the database in one round trip. The answers handed over
// while a settlement is on its way are gathered at once after it, so settlements that fall behind grow
// (to maxPerCall a call) rather than queue up.
func (s *session) settleLoop() {
	defer func() {
		s.mu.Lock()
		s.settlerDone, s.unsettled = true, nil
		s.mu.Unlock()
		s.settlerTook.Broadcast()
		close(s.settlerGone)
	}()
	var pending []answer
	var timer *time.Timer
	var timerC <-chan time.Time
	flush := func() {
		if timer != nil {
			timer.Stop()
			timer, timerC = nil, nil
		}
		for len(pending) > 0 {
			n := len(pending)
			if n > maxPerCall {
				n = maxPerCall
			}
			s.settle(pending[:n])
			pending = pending[n:]
		}
		pending = nil
	}
	for {
		select {
		case <-s.handedOver:
			if s.gather(&pending) || len(pending) >= s.w.opts.BatchSize {
				flush()
			} else if timerC == nil && len(pending) > 0 {
				timer = time.NewTimer(s.w.opts.FlushDelay)
				timerC = timer.C
			}
		case <-timerC:
			timer, timerC = nil, nil
			flush()
		case <-s.settlerStop:
			s.gather(&pending)
			flush()
			return
		}
	}
}

// gather adds the answers handed over to pending, and answers whether one of them is the last of its take.
func (s *session) gather(pending *[]answer) (lastOfTake bool) {
	s.mu.Lock()
	waiting := s.unsettled
	s.unsettled = nil
	s.mu.Unlock()
	s.settlerTook.Broadcast()
	for _, a := range waiting {
		lastOfTake = lastOfTake || a.lastOfTake
	}
	if len(*pending) == 0 {
		*pending = waiting
	} else {
		*pending = append(*pending, waiting...)
	}
	return lastOfTake
}

// settle writes answers: one worker_complete and one worker_fail, sent together. A refusal (PR400: a result
// over 64 KiB, an answer in business time of an unknown calendar, say) refuses the whole call, so the answers
// are then sent one by one and a refused completion becomes a failure with the refusal's text. A broken
// connection is retried a few times; after that the leases expire and the checks run again (at least once).
func (s *session) settle(answers []answer) {
	// In id order: the order heartbeats lock in, so a settlement and a heartbeat never deadlock.
	sort.Slice(answers, func(i, j int) bool { return answers[i].check.ID < answers[j].check.ID })
	var completions, failures, inTx []answer
	var settledInTx []Settlement
	for _, a := range answers {
		if a.settled != nil { // its handler's transaction settled it: nothing to send
			inTx, settledInTx = append(inTx, a), append(settledInTx, *a.settled)
			continue
		}
		if a.err != nil {
			failures = append(failures, a)
		} else {
			completions = append(completions, a)
		}
	}
	if len(inTx) > 0 {
		s.record(inTx, settledInTx)
	}
	if len(completions) == 0 && len(failures) == 0 {
		return
	}
	answers = append(completions, failures...)
	retry := backoff{}
	for attempt := 1; ; attempt++ {
		settlements, err := s.settleCall(completions, failures)
		if err == nil {
			s.record(answers, settlements)
			return
		}
		if isRefusal(err) {
			s.settleOneByOne(completions, failures)
			return
		}
		if attempt == 8 { // tries 0, 0.25, 0.5, 1, 2, 2 and 2 s apart: about a failover's election
			s.w.log.Error("settlement failed, giving up: the leases will expire and the checks run again",
				"checks", answerIDs(answers), "error", err)
			s.forget(answers)
			return
		}
		delay := retry.next()
		if isTransient(err) {
			delay = 0 // a deadlock or a serialization failure: nothing was written, try again now
		}
		s.w.log.Warn("settlement failed, trying again", "checks", answerIDs(answers), "delay", delay, "error", err)
		time.Sleep(delay)
	}
}

func (s *session) settleOneByOne(completions, failures []answer) {
	for _, a := range completions {
		settlements, err := s.settleCall([]answer{a}, nil)
		if isRefusal(err) {
			a.err = refusal("complete", a.check.ID, err)
			failures = append(failures, a)
			continue
		}
		s.recordOrForget([]answer{a}, settlements, err)
	}
	for _, a := range failures {
		settlements, err := s.settleCall(nil, []answer{a})
		s.recordOrForget([]answer{a}, settlements, err)
	}
}

func (s *session) recordOrForget(answers []answer, settlements []Settlement, err error) {
	if err != nil {
		s.w.log.Error("settlement failed: the leases will expire and the checks run again",
			"checks", answerIDs(answers), "error", err)
		s.forget(answers)
		return
	}
	s.record(answers, settlements)
}

// settleCall sends the completions and the failures in one round trip (a pgx batch: prepared statements,
// one implicit transaction).
func (s *session) settleCall(completions, failures []answer) ([]Settlement, error) {
	ctx, cancel := s.callContext()
	defer cancel()
	batch := &pgx.Batch{}
	if len(completions) > 0 {
		ids, tokens := idsAndTokens(completions)
		nexts := make([]*time.Time, len(completions))
		var results [][]byte            // NULL unless some answer keeps a result
		var calendars, delays []*string // NULL unless some answer is in business time: the common call pays nothing
		for i, a := range completions {
			if !a.next.IsZero() {
				next := a.next
				nexts[i] = &next
			}
			if a.result != nil {
				if results == nil {
					results = make([][]byte, len(completions))
				}
				results[i] = a.result
			}
			if b := a.inBusinessTime; b != nil {
				if calendars == nil {
					calendars, delays = make([]*string, len(completions)), make([]*string, len(completions))
				}
				calendars[i], delays[i] = &b.calendar, &b.delay
			}
		}
		batch.Queue(completeSQL, s.w.opts.Name, ids, tokens, nexts, results, calendars, delays, s.now())
	}
	if len(failures) > 0 {
		ids, tokens := idsAndTokens(failures)
		texts := make([]string, len(failures))
		for i, a := range failures {
			texts[i] = storableText(a.err.Error())
		}
		batch.Queue(failSQL, s.w.opts.Name, ids, tokens, texts, s.now())
	}
	results := s.w.pool.SendBatch(ctx, batch)
	defer results.Close()
	settlements := make([]Settlement, 0, len(completions)+len(failures))
	for i := 0; i < batch.Len(); i++ {
		rows, err := results.Query()
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var st Settlement
			var next *time.Time
			var lastError *string
			if err := rows.Scan(&st.CheckID, &st.Outcome, &next, &lastError); err != nil {
				rows.Close()
				return nil, err
			}
			st.NextCheckAt, st.LastError = derefTime(next), deref(lastError)
			settlements = append(settlements, st)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return settlements, results.Close()
}

// record lets go of settled checks, logs what became of them and tells OnSettled.
func (s *session) record(answers []answer, settlements []Settlement) {
	checks := make(map[int64]*Check, len(answers))
	for _, a := range answers {
		checks[a.check.ID] = a.check
	}
	s.forget(answers)
	for _, st := range settlements {
		c := checks[st.CheckID]
		st.Job = c.Job
		if st.Outcome == "rescheduled" || st.Outcome == "retried" || c.GroupKey != "" {
			// Pending again, or its group's next check is free now: perhaps sooner than the next due time the
			// loop is asleep until.
			signal(s.wake)
		}
		switch st.Outcome {
		case "done":
			if s.w.opts.Verbose {
				s.w.log.Debug("check done", "check", st.CheckID, "job", st.Job)
			}
		case "rescheduled":
			if s.w.opts.Verbose {
				s.w.log.Debug("check rescheduled", "check", st.CheckID, "job", st.Job, "next_check_at", st.NextCheckAt)
			}
		case "retried":
			s.w.log.Warn("check failed, retried", "check", st.CheckID, "job", st.Job, "retry_at", st.NextCheckAt,
				"error", st.LastError)
		case "lease_lost":
			st.Err = &LeaseLostError{CheckID: st.CheckID, Reason: st.LastError}
			s.w.log.Warn("answer refused, lease lost", "check", st.CheckID, "job", st.Job, "reason", st.LastError)
		case "failed": // a dead letter
			s.w.log.Error("check failed, a dead letter", "check", st.CheckID, "job", st.Job, "error", st.LastError)
		default: // guard_*
			s.w.log.Warn("check ended by a guard", "check", st.CheckID, "job", st.Job, "outcome", st.Outcome,
				"reason", st.LastError)
		}
		if s.w.opts.OnSettled != nil {
			s.w.opts.OnSettled(st)
		}
	}
	signal(s.progress)
}

func (s *session) forget(answers []answer) {
	s.mu.Lock()
	for _, a := range answers {
		delete(s.held, leaseOf(a.check))
	}
	s.mu.Unlock()
	signal(s.progress)
}

func idsAndTokens(answers []answer) (ids, tokens []int64) {
	ids, tokens = make([]int64, len(answers)), make([]int64, len(answers))
	for i, a := range answers {
		ids[i], tokens[i] = a.check.ID, a.check.token
	}
	return ids, tokens
}

func answerIDs(answers []answer) string {
	ids := make([]int64, len(answers))
	for i, a := range answers {
		ids[i] = a.check.ID
	}
	return joinIDs(ids)
}

// connectListener opens the dedicated connection that LISTENs on prescient_worker.
func (s *session) connectListener(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, s.w.pool.Config().ConnConfig)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN prescient_worker"); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// listen wakes the loop on each notification for one of the classes, reconnecting when the connection
// breaks (a notification is a hint: the next due time finds the work anyway).
func (s *session) listen(ctx context.Context, conn *pgx.Conn) {
	retry := backoff{}
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	ours := map[string]bool{}
	for _, class := range s.classes {
		ours[class] = true
	}
	for ctx.Err() == nil {
		if conn == nil {
			var err error
			if conn, err = s.connectListener(ctx); err != nil {
				if ctx.Err() == nil {
					delay := retry.next()
					s.w.log.Warn("LISTEN failed, trying again", "delay", delay, "error", err)
					sleep(ctx, delay)
				}
				continue
			}
			retry.reset()
			signal(s.wake) // notifications may have been missed meanwhile
		}
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.w.log.Warn("LISTEN connection lost", "error", err)
			}
			conn.Close(context.Background())
			conn = nil
			continue
		}
		if ours[n.Payload] {
			signal(s.wake)
		}
	}
}
