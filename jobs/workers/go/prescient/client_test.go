package prescient_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgconn"

	"github.com/prescient-dev/prescient/jobs/workers/go/prescient"
)

func TestScheduleCommitsAndRollsBackWithTheCallersTransaction(t *testing.T) {
	ctx := context.Background()
	class := newClass(t, "tx")
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	client := &prescient.Client{Clock: func() time.Time { return now }}
	request := prescient.ScheduleRequest{Job: class, EntityName: "order", EntityKey: "1", After: 90 * time.Minute,
		JobKey: class + ":1", Payload: map[string]int{"n": 1}}

	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rolledBack, err := client.Schedule(ctx, tx, request)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := pending(t, rolledBack.ID); ok {
		t.Fatalf("check %d is pending after its transaction rolled back", rolledBack.ID)
	}

	tx, err = db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := client.Schedule(ctx, tx, request)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pending(t, s.ID); ok {
		t.Fatalf("check %d is visible before its transaction committed", s.ID)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	p, ok := pending(t, s.ID)
	if !ok || !p.NextCheckAt.Equal(now.Add(90*time.Minute)) || s.Status != "created" || s.JobKey != class+":1" {
		t.Fatalf("after the commit: want pending at now+90m, created; got %+v %+v (pending %v)", s, p, ok)
	}
	var payload string
	if err := db.QueryRow(ctx, `SELECT payload::text FROM prescient.future_job WHERE id = $1`, s.ID).Scan(&payload); err != nil || payload != `{"n": 1}` {
		t.Fatalf("payload %q, %v", payload, err)
	}

	// The key is pending: error (PR409, typed), keep, replace.
	_, err = client.Schedule(ctx, db, request)
	var refused *prescient.RefusedError
	if !errors.As(err, &refused) || refused.Code != "PR409" || !strings.Contains(refused.Reason, class+":1") {
		t.Fatalf("a second check with a pending key: want a PR409 refusal naming the key, got %v", err)
	}
	request.OnConflict = "keep"
	if kept, err := client.Schedule(ctx, db, request); err != nil || kept.ID != s.ID || kept.Status != "kept" {
		t.Fatalf("on_conflict keep: %+v %v", kept, err)
	}

	// Reschedule and cancel, by id and by key.
	next, found, err := client.Reschedule(ctx, db, s.ID, now.Add(2*time.Hour))
	if err != nil || !found || !next.Equal(now.Add(2*time.Hour)) {
		t.Fatalf("reschedule by id: %v %v %v", next, found, err)
	}
	next, found, err = client.RescheduleKey(ctx, db, class+":1", now.Add(4*time.Hour+300*time.Millisecond))
	if err != nil || !found || !next.Equal(now.Add(4*time.Hour+time.Second)) {
		t.Fatalf("reschedule by key (rounded up to the slot): %v %v %v", next, found, err)
	}
	if _, found, err := client.Reschedule(ctx, db, -1, now.Add(time.Hour)); err != nil || found {
		t.Fatalf("reschedule of no check: found %v, %v", found, err)
	}
	if ok, err := client.CancelKey(ctx, db, class+":1"); err != nil || !ok {
		t.Fatalf("cancel by key: %v %v", ok, err)
	}
	if h, ok := history(t, s.ID); !ok || h.Outcome != "cancelled" {
		t.Fatalf("cancelled check's history: %+v %v", h, ok)
	}
	other := schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "2", After: time.Hour})
	if ok, err := client.Cancel(ctx, db, other); err != nil || !ok {
		t.Fatalf("cancel by id: %v %v", ok, err)
	}
	if ok, err := client.Cancel(ctx, db, other); err != nil || ok {
		t.Fatalf("cancel of a check no longer pending: want false, got %v %v", ok, err)
	}
}

func TestScheduleRefusalsAreTyped(t *testing.T) {
	ctx := context.Background()
	var client prescient.Client // the zero value: the database's clock
	_, err := client.Schedule(ctx, db, prescient.ScheduleRequest{Job: "no_such_class", EntityName: "order", EntityKey: "1"})
	var refused *prescient.RefusedError
	if !errors.As(err, &refused) || refused.Code != "PR400" || refused.Op != "schedule" ||
		!strings.Contains(refused.Reason, "no_such_class") {
		t.Fatalf("an unknown class: want a PR400 refusal naming it, got %v", err)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "PR400" {
		t.Fatalf("the refusal does not unwrap to the *pgconn.PgError: %v", err)
	}
	class := newClass(t, "refusals")
	_, err = client.Schedule(ctx, db, prescient.ScheduleRequest{Job: class, EntityName: "", EntityKey: "1"})
	if !errors.As(err, &refused) || refused.Code != "PR400" {
		t.Fatalf("an empty entity name: want a PR400 refusal, got %v", err)
	}
	// Without a clock, After counts from the database's now.
	s, err := client.Schedule(ctx, db, prescient.ScheduleRequest{Job: class, EntityName: "order", EntityKey: "2",
		After: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var late float64 // seconds after now + 1 h: at most the slot (1 s) and the test's own time
	if err := db.QueryRow(ctx, `SELECT extract(epoch FROM next_check_at - now() - interval '1 hour')::float8
	  FROM prescient.future_job WHERE id = $1`, s.ID).Scan(&late); err != nil || late < 0 || late > 5 {
		t.Fatalf("After 1h without a clock: due %.3f s after now+1h, %v", late, err)
	}
}

func TestSchedulePriority(t *testing.T) {
	ctx := context.Background()
	class := newClass(t, "priority")
	client := &prescient.Client{Clock: func() time.Time { return time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC) }}
	priorityOf := func(id int64) int {
		t.Helper()
		var p int
		if err := db.QueryRow(ctx, `SELECT priority FROM prescient.future_job WHERE id = $1`, id).Scan(&p); err != nil {
			t.Fatalf("the priority of check %d: %v", id, err)
		}
		return p
	}
	two := 2
	if p := priorityOf(schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "1", After: time.Hour, Priority: &two})); p != 2 {
		t.Fatalf("Priority 2: stored %d", p)
	}
	if p := priorityOf(schedule(t, client, prescient.ScheduleRequest{Job: class, EntityKey: "2", After: time.Hour})); p != 5 {
		t.Fatalf("no Priority: stored %d, want the default 5", p)
	}
	twelve := 12
	_, err := client.Schedule(ctx, db, prescient.ScheduleRequest{Job: class, EntityName: "thing", EntityKey: "3",
		After: time.Hour, Priority: &twelve})
	var refused *prescient.RefusedError
	if !errors.As(err, &refused) || refused.Code != "PR400" || refused.Op != "schedule" ||
		refused.Reason != "the priority 12 is not one of 0 (first) to 9 (last)" {
		t.Fatalf("Priority 12: want a PR400 refusal, got %v", err)
	}
	var written int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM prescient.future_job WHERE job = $1 AND entity_key = '3'`,
		class).Scan(&written); err != nil || written != 0 {
		t.Fatalf("the refused check was written: %d rows, %v", written, err)
	}
}

func TestScheduleTraceContext(t *testing.T) {
	ctx := context.Background()
	class := newClass(t, "trace")
	var client prescient.Client
	id := schedule(t, &client, prescient.ScheduleRequest{Job: class, EntityKey: "1", After: time.Hour,
		Traceparent: callerTraceparent, Tracestate: "vendor=abc"})
	var traceparent, tracestate string
	if err := db.QueryRow(ctx, `SELECT traceparent, tracestate FROM prescient.future_job WHERE id = $1`, id).
		Scan(&traceparent, &tracestate); err != nil || traceparent != callerTraceparent || tracestate != "vendor=abc" {
		t.Fatalf("stored %q %q, %v", traceparent, tracestate, err)
	}
	_, err := client.Schedule(ctx, db, prescient.ScheduleRequest{Job: class, EntityName: "thing", EntityKey: "2",
		After: time.Hour, Traceparent: "00-not-a-trace"})
	var refused *prescient.RefusedError
	if !errors.As(err, &refused) || refused.Code != "PR400" || refused.Op != "schedule" ||
		!strings.Contains(refused.Reason, "is not a W3C traceparent") {
		t.Fatalf("a malformed traceparent: want a PR400 refusal, got %v", err)
	}
}

// An office open 09:00 to 17:00 in Berlin on weekdays. Friday 2026-11-27 14:00 UTC is 15:00 there: two of
// four hours of open time are left that day, the other two are on Monday, which opens at 08:00 UTC.
const officeHours = `{"hours": {"mon": ["09:00-17:00"], "tue": ["09:00-17:00"], "wed": ["09:00-17:00"],
  "thu": ["09:00-17:00"], "fri": ["09:00-17:00"]}}`

func TestScheduleInBusinessTime(t *testing.T) {
	ctx := context.Background()
	if _, err := db.Exec(ctx, "SELECT prescient.calendar_set('office', 'Europe/Berlin', $1::jsonb)", officeHours); err != nil {
		t.Fatal(err)
	}
	class := newClass(t, "business")
	friday := time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC)
	onFriday := &prescient.Client{Clock: func() time.Time { return friday }}
	onSaturday := &prescient.Client{Clock: func() time.Time { return time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC) }}
	businessTimeOf := func(id int64) string {
		t.Helper()
		var shown string
		if err := db.QueryRow(ctx, `SELECT format('%s %s %s %s', next_check_at AT TIME ZONE 'UTC', calendar,
		  calendar_version, coalesce(business_delay, '-')) FROM prescient.future_job WHERE id = $1`, id).Scan(&shown); err != nil {
			t.Fatalf("check %d: %v", id, err)
		}
		return shown
	}
	escalate := schedule(t, onFriday, prescient.ScheduleRequest{Job: class, EntityKey: "1", At: friday,
		Calendar: "office", BusinessDelay: "4h"})
	if got := businessTimeOf(escalate); got != "2026-11-30 10:00:00 office 1 4h" {
		t.Fatalf("4h of open time from Friday 15:00 in Berlin: %s", got)
	}
	page := schedule(t, onSaturday, prescient.ScheduleRequest{Job: class, EntityKey: "2", Calendar: "office"})
	if got := businessTimeOf(page); got != "2026-11-30 08:00:00 office 1 -" {
		t.Fatalf("no time on a Saturday: want now's next opening, got %s", got)
	}

	_, err := onFriday.Schedule(ctx, db, prescient.ScheduleRequest{Job: class, EntityName: "thing", EntityKey: "3",
		At: friday, Calendar: "nope", BusinessDelay: "4h"})
	var refused *prescient.RefusedError
	if !errors.As(err, &refused) || refused.Code != "PR400" ||
		refused.Reason != "no calendar named 'nope' (prescient calendar list)" {
		t.Fatalf("an unknown calendar: want a PR400 refusal naming it, got %v", err)
	}
	_, err = onFriday.Schedule(ctx, db, prescient.ScheduleRequest{Job: class, EntityName: "thing", EntityKey: "4",
		After: time.Hour, Calendar: "office", BusinessDelay: "4h"})
	if err == nil || errors.As(err, &refused) || !strings.Contains(err.Error(), "give no After beside it") {
		t.Fatalf("After beside a business delay: want the client's error, got %v", err)
	}
}

func TestScheduleDebounceStopsAtMaxWait(t *testing.T) {
	ctx := context.Background()
	class := newClass(t, "debounce")
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	client := &prescient.Client{Clock: func() time.Time { return now }}
	request := prescient.ScheduleRequest{Job: class, EntityName: "order", EntityKey: "1", JobKey: class + ":1",
		After: time.Hour, OnConflict: "debounce", MaxWait: 90 * time.Minute}
	first, err := client.Schedule(ctx, db, request)
	if err != nil || first.Status != "created" {
		t.Fatalf("the first enqueue: %+v, %v", first, err)
	}
	request.After = 2 * time.Hour
	second, err := client.Schedule(ctx, db, request)
	if err != nil || second.Status != "debounced" || second.ID != first.ID ||
		!second.NextCheckAt.Equal(now.Add(90*time.Minute)) {
		t.Fatalf("the second enqueue: want the same check debounced to the ceiling, now+90m; got %+v, %v", second, err)
	}
	request.MaxWait = 0
	_, err = client.Schedule(ctx, db, request)
	var refused *prescient.RefusedError
	if !errors.As(err, &refused) || refused.Code != "PR400" ||
		refused.Reason != "debounce needs max_wait, its ceiling (without one, use on_conflict replace)" {
		t.Fatalf("debounce without MaxWait: want a PR400 refusal, got %v", err)
	}
}

func TestScheduleCollectGathersThePayloads(t *testing.T) {
	ctx := context.Background()
	class := newClass(t, "collect")
	client := &prescient.Client{Clock: func() time.Time { return time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC) }}
	var statuses []string
	var id int64
	for n := 1; n <= 3; n++ {
		s, err := client.Schedule(ctx, db, prescient.ScheduleRequest{Job: class, EntityName: "user", EntityKey: "7",
			JobKey: class + ":7", After: 5 * time.Minute, Payload: map[string]int{"n": n}, OnConflict: "collect",
			MaxWait: 30 * time.Minute})
		if err != nil {
			t.Fatalf("enqueue %d: %v", n, err)
		}
		statuses = append(statuses, s.Status)
		id = s.ID
	}
	if strings.Join(statuses, ",") != "created,collected,collected" {
		t.Fatalf("statuses %v", statuses)
	}
	var pendingChecks int
	var payload string
	if err := db.QueryRow(ctx, `SELECT count(*), max(payload::text) FROM prescient.future_job WHERE job = $1`,
		class).Scan(&pendingChecks, &payload); err != nil {
		t.Fatal(err)
	}
	if pendingChecks != 1 || payload != `{"collected": [{"n": 1}, {"n": 2}, {"n": 3}]}` {
		t.Fatalf("want one pending check (%d) collecting the three payloads in order; got %d, %s", id,
			pendingChecks, payload)
	}
}

func TestCronAdd(t *testing.T) {
	ctx := context.Background()
	class := newClass(t, "cron")
	client := &prescient.Client{Clock: func() time.Time { return time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC) }}
	if err := client.CronAdd(ctx, db, prescient.Cron{ID: class + "_daily", Spec: "0 9 * * *", TimeZone: "Europe/Paris",
		Job: class, Payload: map[string]string{"report": "daily"}}); err != nil {
		t.Fatal(err)
	}
	var spec, zone, job, payload string
	if err := db.QueryRow(ctx, `SELECT spec, time_zone, job, payload::text FROM prescient.cron_schedule WHERE id = $1`,
		class+"_daily").Scan(&spec, &zone, &job, &payload); err != nil {
		t.Fatal(err)
	}
	if spec != "0 9 * * *" || zone != "Europe/Paris" || job != class || payload != `{"report": "daily"}` {
		t.Fatalf("cron_schedule row: %q %q %q %q", spec, zone, job, payload)
	}
	err := client.CronAdd(ctx, db, prescient.Cron{ID: class + "_bad", Spec: "not a spec", Job: class})
	var refused *prescient.RefusedError
	if !errors.As(err, &refused) || refused.Code != "PR400" {
		t.Fatalf("a bad spec: want a PR400 refusal, got %v", err)
	}
}

// Every option of prescient.schedule and prescient.cron_add is reachable from Go
// (jobs/workers/conformance/enqueue-options.json): each is shown by what the database stored or answered.
func TestEveryEnqueueOptionIsReachable(t *testing.T) {
	ctx := context.Background()
	class := newClass(t, "options")
	now := time.Date(2031, 1, 2, 3, 4, 0, 0, time.UTC)
	client := &prescient.Client{Clock: func() time.Time { return now }}
	first, err := client.Schedule(ctx, db, prescient.ScheduleRequest{Job: class, EntityName: "order", EntityKey: "1",
		After: time.Hour, JobKey: class + ":1", Window: 10 * time.Second, By: "go-test"})
	if err != nil {
		t.Fatal(err)
	}
	var by string
	var window bool
	if err := db.QueryRow(ctx, `SELECT enqueued_by, next_check_at BETWEEN $2::timestamptz AND $2::timestamptz + interval '10 seconds'
	  FROM prescient.future_job WHERE id = $1`, first.ID, now.Add(time.Hour)).Scan(&by, &window); err != nil {
		t.Fatal(err)
	}
	if by != "go-test" || !window {
		t.Fatalf("by %q, within the window %v", by, window)
	}
	// Settled done, the key is not scheduled again within DedupeFor (of the outcomes named).
	if _, err := db.Exec(ctx, "SELECT prescient.cancel(p_id => $1::bigint, p_now => $2::timestamptz)", first.ID, now); err != nil {
		t.Fatal(err)
	}
	again := prescient.ScheduleRequest{Job: class, EntityName: "order", EntityKey: "1", After: time.Hour,
		JobKey: class + ":1", DedupeFor: 24 * time.Hour, DedupeOutcomes: []string{"cancelled"}}
	deduplicated, err := client.Schedule(ctx, db, again)
	if err != nil || deduplicated.Status != "deduplicated" {
		t.Fatalf("deduplicated: %+v %v", deduplicated, err)
	}
	// A class deployed later.
	if _, err := client.Schedule(ctx, db, prescient.ScheduleRequest{Job: class + "_later", EntityName: "order",
		EntityKey: "2", After: time.Hour, AllowUnknownClass: true}); err != nil {
		t.Fatalf("an unknown class, allowed: %v", err)
	}
	if err := client.CronAdd(ctx, db, prescient.Cron{ID: class + "_every", Spec: "*/5 * * * *", Job: class,
		CatchUp: "none", Deadline: 90 * time.Second, Jitter: 2 * time.Minute, By: "go-test",
		Options: map[string]interface{}{"priority": 2, "max_runs": 3}}); err != nil {
		t.Fatal(err)
	}
	var catchUp, createdBy string
	var deadline, jitter, priority, maxRuns int
	if err := db.QueryRow(ctx, `SELECT catch_up, deadline_seconds, jitter_seconds, created_by, priority, max_runs
	  FROM prescient.cron_schedule WHERE id = $1`, class+"_every").Scan(&catchUp, &deadline, &jitter, &createdBy,
		&priority, &maxRuns); err != nil {
		t.Fatal(err)
	}
	if catchUp != "none" || deadline != 90 || jitter != 120 || createdBy != "go-test" || priority != 2 || maxRuns != 3 {
		t.Fatalf("cron_schedule row: %q %d %d %q %d %d", catchUp, deadline, jitter, createdBy, priority, maxRuns)
	}
	if err := client.CronAdd(ctx, db, prescient.Cron{ID: class + "_spread", Spec: "@hourly", Job: class,
		Window: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
}
