package prescient

import (
	"context"
	"encoding/json"
	"fmt"
)

// Handle registers h as the handler of a job class on w, as w.Handle does, with the check's payload decoded
// from its JSON into a T first (encoding/json's rules: unknown fields are ignored, a missing one stays zero):
//
//	prescient.Handle(worker, "order_unshipped", func(ctx context.Context, c *prescient.Check, o Order) (prescient.Answer, error) {...})
//
// A payload that does not decode into a T fails the check with the decoding error (its retries, then a dead
// letter), and h is not called.
func Handle[T any](w *Worker, class string, h func(ctx context.Context, c *Check, payload T) (Answer, error)) {
	w.Handle(class, func(ctx context.Context, c *Check) (Answer, error) {
		var payload T
		if err := json.Unmarshal(c.Payload, &payload); err != nil {
			return Answer{}, fmt.Errorf("prescient: the payload of check %d is not a %T: %w", c.ID, payload, err)
		}
		return h(ctx, c, payload)
	})
}
