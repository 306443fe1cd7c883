package prescient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
)

// Querier is what the enqueue functions run on: a pgx.Tx (the check commits or rolls back with the caller's
// transaction), a *pgx.Conn, a *pgxpool.Pool or a *pgxpool.Conn.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...interface{}) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...interface{}) pgx.Row
}

// Client enqueues, cancels and reschedules checks on the caller's connection or transaction. The zero value
// is ready to use.
type Client struct {
	// Clock, when set, is "now" for every call (passed as p_now, and the base of ScheduleRequest.After).
	// Nil: the database's now().
	Clock func() time.Time
}

// ScheduleRequest asks for one check (prescient.schedule).
type ScheduleRequest struct {
	Job        string // the job class
	EntityName string
	EntityKey  string
	At         time.Time     // when to look; zero: After from now
	After      time.Duration // used when At is zero
	JobKey     string        // optional: at most one pending check per key
	GroupKey   string        // optional: a group's checks run one at a time, in order
	Payload    interface{}   // marshalled to JSON (json.RawMessage as it is); nil: {}
	// OnConflict is what an enqueue does when JobKey is pending already: "error" (the default), "keep",
	// "replace", "debounce" (replace, never past the first enqueue plus MaxWait) or "collect" (a digest: the
	// check's payload is {"collected": [...]}, each enqueue's payload in arrival order; docs/concepts.md).
	OnConflict string
	MaxWait    time.Duration // with "debounce" or "collect" (which need it): the ceiling; 0: none
	// Priority is 0 (first) to 9 (last) among the checks due at the same time; nil is the default, 5. The
	// database refuses another number (a PR400 *RefusedError).
	Priority *int
	// Traceparent and Tracestate are the W3C trace context the check is created in (the caller's span; ""
	// when none); each run's handler gets that trace with a span id of the run's own (Check.Traceparent).
	// The database refuses a malformed one (a PR400 *RefusedError).
	Traceparent string
	Tracestate  string
	// Calendar times the check in that calendar's open time (docs/business-time.md): BusinessDelay of open
	// time after its time ("4h", "90m", "1h30m", "3bd"), or with none its time if the calendar is open then,
	// else its next opening. Its time is At, else now plus After (with neither, now); a BusinessDelay counts
	// from At or from now, so an After beside it is an error. "" for none. The database refuses an unknown
	// calendar or a malformed delay (a PR400 *RefusedError naming it).
	Calendar      string
	BusinessDelay string
	// Window lets the check fire any time in this window after its time (0: none): a herd given one time
	// spreads over the window's slots (docs/flow-control.md).
	Window time.Duration
	// DedupeFor: with a JobKey, not scheduled again while a check of the key settled with one of
	// DedupeOutcomes (nil: done) within this long (0: no dedupe); the answer's Status is "deduplicated".
	DedupeFor      time.Duration
	DedupeOutcomes []string
	// AllowUnknownClass accepts a class the registry does not know yet (deployed later).
	AllowUnknownClass bool
	By                string // who enqueued it (enqueued_by); "": the database's current_user
}

// Scheduled is the database's answer to a ScheduleRequest.
type Scheduled struct {
	ID           int64
	JobKey       string
	NextCheckAt  time.Time // the slot the check is due at (zero when deduplicated)
	FirstCheckAt time.Time
	Status       string // created, kept, replaced, debounced, collected, deduplicated
}

// Cron is a recurring schedule (prescient.cron_add): a check of Job at every time Spec names.
type Cron struct {
	ID       string // the schedule's name
	Spec     string // a cron expression, e.g. "0 9 * * 1-5"
	TimeZone string // "" means UTC
	Job      string
	Payload  interface{}   // as in ScheduleRequest
	CatchUp  string        // after downtime: "one" (""), "all" or "none" of the missed occurrences
	Deadline time.Duration // an occurrence fired later than this after its time is skipped (0: none)
	// Window spreads the schedules' occurrences over this window; Jitter gives each occurrence an offset of
	// its own within it (docs/schedules.md). 0: none; not both.
	Window, Jitter time.Duration
	// Options: overlap, start_at, end_at, max_runs, priority, pause_after_failures, dst_repeated,
	// dst_missing, calendar, when_closed (docs/schedules.md).
	Options map[string]interface{}
	By      string // who added it; "": the database's current_user
}

func (c *Client) now() interface{} {
	if c == nil || c.Clock == nil {
		return nil
	}
	return c.Clock()
}

// The enqueue functions' p_now defaults to now() (the transaction's start), not NULL: coalesce keeps that.
const scheduleSQL = `SELECT id, job_key, next_check_at, first_check_at, status FROM prescient.schedule(
  p_job => $1::text, p_entity_name => $2::text, p_entity_key => $3::text,
  p_at => coalesce($4::timestamptz, coalesce($9::timestamptz, now()) + make_interval(secs => $5::float8)),
  p_job_key => $6::text, p_group_key => $7::text, p_payload => $8::jsonb, p_on_conflict => $10::text,
  p_now => coalesce($9::timestamptz, now()), p_priority => $11::integer, p_traceparent => $12::text,
  p_tracestate => $13::text, p_max_wait => make_interval(secs => $14::float8),
  p_window => make_interval(secs => $15::float8), p_dedupe_for => make_interval(secs => $16::float8),
  p_dedupe_outcomes => coalesce($17::text[], '{done}'), p_allow_unknown_class => $18::boolean,
  p_by => coalesce($19::text, current_user), p_calendar => $20::text, p_business_delay => $21::text)`

// Schedule puts a check into the future, on q (the caller's transaction).
func (c *Client) Schedule(ctx context.Context, q Querier, r ScheduleRequest) (Scheduled, error) {
	if r.BusinessDelay != "" && r.After != 0 {
		return Scheduled{}, errors.New("prescient: schedule: a business delay counts from At or from now: give no After beside it")
	}
	payload, err := jsonText(r.Payload)
	if err != nil {
		return Scheduled{}, fmt.Errorf("prescient: schedule: payload: %w", err)
	}
	var at interface{}
	if !r.At.IsZero() {
		at = r.At
	} else if c != nil && c.Clock != nil {
		at = c.Clock().Add(r.After)
	}
	onConflict := r.OnConflict
	if onConflict == "" {
		onConflict = "error"
	}
	var s Scheduled
	var dedupeOutcomes interface{} // NULL: the default, done
	if r.DedupeOutcomes != nil {
		dedupeOutcomes = r.DedupeOutcomes
	}
	var jobKey *string
	var next, first *time.Time
	err = q.QueryRow(ctx, scheduleSQL, r.Job, r.EntityName, r.EntityKey, at, r.After.Seconds(), nullable(r.JobKey),
		nullable(r.GroupKey), payload, c.now(), onConflict, r.Priority, nullable(r.Traceparent),
		nullable(r.Tracestate), seconds(r.MaxWait), seconds(r.Window), seconds(r.DedupeFor), dedupeOutcomes,
		r.AllowUnknownClass, nullable(r.By), nullable(r.Calendar), nullable(r.BusinessDelay)).
		Scan(&s.ID, &jobKey, &next, &first, &s.Status)
	if err != nil {
		return Scheduled{}, refusal("schedule", 0, err)
	}
	s.JobKey, s.NextCheckAt, s.FirstCheckAt = deref(jobKey), derefTime(next), derefTime(first)
	return s, nil
}

// Cancel ends the pending check id (it goes to the history as cancelled). False: no such pending check.
func (c *Client) Cancel(ctx context.Context, q Querier, id int64) (bool, error) {
	return c.cancel(ctx, q, id, nil)
}

// CancelKey ends the pending check with the job key. False: no such pending check.
func (c *Client) CancelKey(ctx context.Context, q Querier, jobKey string) (bool, error) {
	return c.cancel(ctx, q, nil, jobKey)
}

func (c *Client) cancel(ctx context.Context, q Querier, id, jobKey interface{}) (bool, error) {
	var cancelled *int64
	err := q.QueryRow(ctx, `SELECT prescient.cancel(p_id => $1::bigint, p_job_key => $2::text, p_now => coalesce($3::timestamptz, now()))`,
		id, jobKey, c.now()).Scan(&cancelled)
	if err != nil {
		return false, refusal("cancel", 0, err)
	}
	return cancelled != nil, nil
}

// Reschedule moves the pending check id to at; it answers the slot it is due at now. False: no such check.
func (c *Client) Reschedule(ctx context.Context, q Querier, id int64, at time.Time) (time.Time, bool, error) {
	return c.reschedule(ctx, q, id, nil, at)
}

// RescheduleKey moves the pending check with the job key to at. False: no such check.
func (c *Client) RescheduleKey(ctx context.Context, q Querier, jobKey string, at time.Time) (time.Time, bool, error) {
	return c.reschedule(ctx, q, nil, jobKey, at)
}

func (c *Client) reschedule(ctx context.Context, q Querier, id, jobKey interface{}, at time.Time) (time.Time, bool, error) {
	var next time.Time
	err := q.QueryRow(ctx, `SELECT next_check_at FROM prescient.reschedule(p_at => $1::timestamptz, p_id => $2::bigint, p_job_key => $3::text,
	  p_now => coalesce($4::timestamptz, now()))`, at, id, jobKey, c.now()).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, refusal("reschedule", 0, err)
	}
	return next, true, nil
}

// CronAdd adds a recurring schedule. The database function needs the schema owner's rights: run it on a
// connection of a role that has them.
func (c *Client) CronAdd(ctx context.Context, q Querier, cron Cron) error {
	payload, err := jsonText(cron.Payload)
	if err != nil {
		return fmt.Errorf("prescient: cron_add: payload: %w", err)
	}
	timeZone := cron.TimeZone
	if timeZone == "" {
		timeZone = "UTC"
	}
	catchUp := cron.CatchUp
	if catchUp == "" {
		catchUp = "one"
	}
	var options interface{} // NULL: none
	if cron.Options != nil {
		text, err := json.Marshal(cron.Options)
		if err != nil {
			return fmt.Errorf("prescient: cron_add: options: %w", err)
		}
		options = string(text)
	}
	_, err = q.Exec(ctx, `SELECT prescient.cron_add(p_id => $1::text, p_spec => $2::text, p_time_zone => $3::text, p_job => $4::text,
	  p_payload => $5::jsonb, p_now => coalesce($6::timestamptz, now()), p_catch_up => $7::text,
	  p_deadline_seconds => $8::bigint, p_by => coalesce($9::text, current_user), p_window_seconds => $10::bigint,
	  p_jitter_seconds => $11::bigint, p_options => $12::jsonb)`,
		cron.ID, cron.Spec, timeZone, cron.Job, payload, c.now(), catchUp, wholeSeconds(cron.Deadline),
		nullable(cron.By), wholeSeconds(cron.Window), wholeSeconds(cron.Jitter), options)
	return refusal("cron_add", 0, err)
}

// seconds is a duration for make_interval, or NULL for none (make_interval of NULL is NULL).
func seconds(d time.Duration) interface{} {
	if d == 0 {
		return nil
	}
	return d.Seconds()
}

// wholeSeconds is a duration in whole seconds (rounded up: never shorter than asked), or NULL for none.
func wholeSeconds(d time.Duration) interface{} {
	if d == 0 {
		return nil
	}
	return int64((d + time.Second - 1) / time.Second)
}

// jsonText is a payload as JSON text; nil is the empty object.
func jsonText(v interface{}) (string, error) {
	if v == nil {
		return "{}", nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

func nullable(s string) interface{} {
	if s == "" {
		return nil
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
