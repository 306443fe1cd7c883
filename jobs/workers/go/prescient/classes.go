package prescient

import (
	"context"
	"time"
)

// Policy is a worker class's policy (docs/workers.md, "Declaring a worker class"). A nil count or a zero
// duration leaves that field as it is. MaxChecks: how many times a check may ask to be looked at again (0: no
// limit; the database's default is 5); MaxAttempts: failed attempts before a dead letter.
type Policy struct {
	MaxChecks, MaxAttempts       *int
	Backoff, BackoffMax, Timeout time.Duration
}

// DeclareWorkerClass makes job a worker class if no one declared it, and sets the policy's fields: with only
// prescient_worker's rights, no schema owner and no prescient binary. It answers "added" or "known". A
// runner's class, a bad policy or a bad name is refused (*RefusedError), and nothing is written.
func DeclareWorkerClass(ctx context.Context, q Querier, job string, p Policy) (string, error) {
	var status string
	err := q.QueryRow(ctx, `SELECT prescient.declare_worker_class($1::text, p_max_checks => $2::integer,
	  p_max_attempts => $3::integer, p_backoff => make_interval(secs => $4::float8),
	  p_backoff_max => make_interval(secs => $5::float8), p_timeout => make_interval(secs => $6::float8))`,
		job, p.MaxChecks, p.MaxAttempts, seconds(p.Backoff), seconds(p.BackoffMax), seconds(p.Timeout)).Scan(&status)
	return status, refusal("declare_worker_class", 0, err)
}
