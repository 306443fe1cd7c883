package prescient

import (
	"context"
	"encoding/json"
	"fmt"
)

// decodePayload decodes a check's payload into a T; the error names the check and the type.
func decodePayload[T any](c *Check) (T, error) {
	var payload T
	if err := json.Unmarshal(c.Payload, &payload); err != nil {
		return payload, fmt.Errorf("prescient: the payload of check %d is not a %T: %w", c.ID, payload, err)
	}
	return payload, nil
}

// Handle registers h as the handler of a job class on w, as w.Handle does, with the check's payload decoded
// from its JSON into a T first (encoding/json's rules: unknown fields are ignored, a missing one stays zero):
//
//	prescient.Handle(worker, "order_unshipped", func(ctx context.Context, c *prescient.Check, o Order) (prescient.Answer, error) {...})
//
// A payload that does not decode into a T fails the check with the decoding error (its retries, then a dead
// letter), and h is not called.
func Handle[T any](w *Worker, class string, h func(ctx context.Context, c *Check, payload T) (Answer, error),
	opts ...HandleOption) {
	w.Handle(class, func(ctx context.Context, c *Check) (Answer, error) {
		payload, err := decodePayload[T](c)
		if err != nil {
			return Answer{}, err
		}
		return h(ctx, c, payload)
	}, opts...)
}

// HandleBatch registers h as the batch handler of a job class on w, as w.HandleBatch does, with each check's
// payload decoded into a T first: payloads[i] is checks[i]'s. A check whose payload does not decode fails
// alone with the decoding error, and h gets the others (and is not called when none is left). h answers as a
// BatchHandlerFunc does, one Answer per check it got.
func HandleBatch[T any](w *Worker, class string,
	h func(ctx context.Context, checks []*Check, payloads []T) ([]Answer, error), opts ...HandleOption) {
	w.HandleBatch(class, func(ctx context.Context, checks []*Check) ([]Answer, error) {
		answers := make([]Answer, len(checks))
		decoded := make([]*Check, 0, len(checks))
		payloads := make([]T, 0, len(checks))
		at := make([]int, 0, len(checks)) // the place in checks of each check decoded
		for i, c := range checks {
			payload, err := decodePayload[T](c)
			if err != nil {
				answers[i] = Fail(err)
				continue
			}
			decoded, payloads, at = append(decoded, c), append(payloads, payload), append(at, i)
		}
		if len(decoded) == 0 {
			return answers, nil
		}
		got, err := h(ctx, decoded, payloads)
		if err != nil {
			return nil, err
		}
		if len(got) != len(decoded) {
			return nil, fmt.Errorf("the batch handler answered %d of its %d checks", len(got), len(decoded))
		}
		for j, i := range at {
			answers[i] = got[j]
		}
		return answers, nil
	}, opts...)
}
