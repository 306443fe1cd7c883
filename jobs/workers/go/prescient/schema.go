package prescient

import (
	"context"
	_ "embed" // the schema bundle
	"fmt"

	"github.com/jackc/pgx/v4"
)

// The schema as one SQL file (a copy of the repository's sql/prescient-bundle.sql that a test keeps identical),
// compiled into the package: an application with no prescient binary creates or upgrades its database with it.
//
//go:embed prescient-bundle.sql
var schemaBundle string

// SchemaBundle is the bundle's text, as Migrate applies it.
func SchemaBundle() string { return schemaBundle }

// Applied is one file Migrate applied: Kind is "migration" or "functions".
type Applied struct {
	Kind, Name string
}

// Migrate creates or upgrades the prescient schema on conn, in one transaction, as the schema's owner, with
// the bookkeeping of `prescient migrate` (docs/workers.md, "The schema without the binary"), so either upgrades
// after the other. slotSeconds is a new database's slot resolution (0: 60); on an existing one it must match,
// or be 0. A database newer than the bundle is refused (*RefusedError) before anything is written.
func Migrate(ctx context.Context, conn *pgx.Conn, slotSeconds int) ([]Applied, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, refusal("migrate", 0, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	// The bundle is many statements: the simple protocol runs them as one query.
	if _, err := tx.Exec(ctx, schemaBundle, pgx.QuerySimpleProtocol(true)); err != nil {
		return nil, refusal("migrate", 0, err)
	}
	var slot interface{}
	if slotSeconds != 0 {
		slot = slotSeconds
	}
	rows, err := tx.Query(ctx, "SELECT kind, name FROM pg_temp.prescient_migrate($1::integer)", slot)
	if err != nil {
		return nil, refusal("migrate", 0, err)
	}
	var applied []Applied
	for rows.Next() {
		var a Applied
		if err := rows.Scan(&a.Kind, &a.Name); err != nil {
			rows.Close()
			return nil, fmt.Errorf("prescient: migrate: %w", err)
		}
		applied = append(applied, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, refusal("migrate", 0, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, refusal("migrate", 0, err)
	}
	return applied, nil
}
