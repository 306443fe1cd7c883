package prescient

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgconn"
)

// The kinds of refusal, for errors.Is: a *RefusedError is one of the first three by its SQLSTATE, a
// *LeaseLostError is ErrLeaseLost. The typed errors (errors.As) carry the check, the call and the reason.
var (
	// ErrRefused: the database refused the call's input (SQLSTATE PR400): a bad value, an unknown class, a
	// runner's class where a worker class is needed, a pinned clock the database does not allow.
	ErrRefused = errors.New("prescient: refused")
	// ErrNotFound: nothing of the id the call named (PR404), e.g. Retry of a check with no failure.
	ErrNotFound = errors.New("prescient: not found")
	// ErrConflict: a pending check is in the way (PR409): its job key is taken, or it is pending already.
	ErrConflict = errors.New("prescient: conflict")
	// ErrLeaseLost: a settlement was refused because the worker no longer holds the check's lease.
	ErrLeaseLost = errors.New("prescient: lease lost")
)

// sentinels are the refusals' kinds by SQLSTATE: the codes a *RefusedError is made for.
var sentinels = map[string]error{"PR400": ErrRefused, "PR404": ErrNotFound, "PR409": ErrConflict}

// RefusedError is a refusal by the database: bad input (SQLSTATE PR400), nothing of that id (PR404: Retry of a
// check the history has no failure of) or a conflict with a pending check (PR409: its job key is taken, or it is
// pending already). Nothing of the refused call was written.
type RefusedError struct {
	Op      string // the call refused: "schedule", "take", "complete", ...
	CheckID int64  // the check concerned, when the call named one (0 otherwise)
	Code    string // the SQLSTATE: PR400, PR404 or PR409
	Reason  string // the database's message
	pgErr   *pgconn.PgError
}

func (e *RefusedError) Error() string {
	if e.CheckID != 0 {
		return fmt.Sprintf("prescient: check %d: %s refused (%s): %s", e.CheckID, e.Op, e.Code, e.Reason)
	}
	return fmt.Sprintf("prescient: %s refused (%s): %s", e.Op, e.Code, e.Reason)
}

// Unwrap gives the *pgconn.PgError, for callers that look at the SQLSTATE with errors.As.
func (e *RefusedError) Unwrap() error { return e.pgErr }

// Is makes errors.Is(err, ErrRefused), ErrNotFound or ErrConflict true for the refusal of that SQLSTATE.
func (e *RefusedError) Is(target error) bool { return target != nil && sentinels[e.Code] == target }

// LeaseLostError says a settlement was refused: the check's lease expired, another worker holds it, or it was
// cancelled or settled meanwhile. The answer was not recorded; the check runs again (at least once). From
// Check.CompleteTx or Check.FailTx: roll the handler's transaction back, its writes are not the check's.
type LeaseLostError struct {
	CheckID int64
	Reason  string // the database's reason
}

func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("prescient: check %d: lease lost: %s", e.CheckID, e.Reason)
}

// Is makes errors.Is(err, ErrLeaseLost) true.
func (e *LeaseLostError) Is(target error) bool { return target == ErrLeaseLost }

// refusal turns the database's refusals into a *RefusedError and leaves other errors as they are.
func refusal(op string, checkID int64, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && sentinels[pgErr.Code] != nil {
		return &RefusedError{Op: op, CheckID: checkID, Code: pgErr.Code, Reason: pgErr.Message, pgErr: pgErr}
	}
	if err != nil && checkID != 0 {
		return fmt.Errorf("prescient: check %d: %s: %w", checkID, op, err)
	}
	if err != nil {
		return fmt.Errorf("prescient: %s: %w", op, err)
	}
	return nil
}

// isRefusal says whether err is the database refusing a call's input (PR400), as opposed to a broken
// connection, which is worth retrying.
func isRefusal(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "PR400"
}

// isTransient says whether err is a deadlock or a serialization failure: the transaction was rolled back
// and the same call may simply be made again.
func isTransient(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// storableText makes an error text PostgreSQL accepts: valid UTF-8 without NUL (it refuses the whole call
// otherwise, docs/workers.md). The database cuts it to 4 096 bytes itself.
func storableText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ReplaceAll(s, "\x00", `\0`)
}
