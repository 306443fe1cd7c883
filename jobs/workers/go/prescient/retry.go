package prescient

import (
	"context"
	"time"
)

// Retry puts a dead letter back (prescient.worker_retry): check id's latest failure in the history becomes a
// pending check again, due now by the database's clock, its attempts counted afresh, with its payload, keys and
// policy. It answers the time the check is due. With prescient_worker's rights, for a worker class's checks
// only. Refused (*RefusedError), with nothing written: PR409 when the check is pending already or another
// pending check holds its job key, PR404 when the history has no failure of it, PR400 for a runner's class.
func Retry(ctx context.Context, q Querier, id int64) (time.Time, error) {
	var due time.Time
	err := q.QueryRow(ctx, `SELECT prescient.worker_retry($1::bigint)`, id).Scan(&due)
	return due, refusal("retry", id, err)
}
