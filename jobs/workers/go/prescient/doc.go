// Package prescient is the Go client of prescient's worker protocol (docs/workers.md): it enqueues checks
// inside the application's own transaction, and runs the checks of worker classes in the application's
// own service.
//
// A Client's methods take a pgx.Tx (or a *pgx.Conn, a *pgxpool.Pool: anything with Exec and QueryRow), so a
// check commits or rolls back with the caller's work. A Worker takes due checks of the classes it has
// handlers for, in batches of what it can start soon, runs them in at most Concurrency goroutines (a
// handler per check, or a batch handler per many), keeps their leases alive, and settles the answers in
// batches. A handler may instead settle its check in its own transaction (Check.CompleteTx, Check.FailTx),
// so that its writes and the settlement commit together: effects exactly once. Every rule of a check's
// life (never early, never twice while leased, groups, flow limits, guards, retries, dead letters) is
// enforced by the database, not here.
//
// Handle and HandleBatch (package functions, generic) give a handler each check's payload decoded into a
// type of the application's. A refusal by the database is a *RefusedError, matched by kind with errors.Is
// (ErrRefused, ErrNotFound, ErrConflict; ErrLeaseLost for a *LeaseLostError). A worker logs each event on a
// Logger, the method shapes of log/slog's *slog.Logger (LogLogger adapts a *log.Logger).
//
// Time is injectable: Client.Clock and Options.Clock, when set, are passed to the database as p_now, so a
// test can pin "three hours later" without sleeping (prescienttest.Clock). When nil, the database's clock
// decides.
package prescient
