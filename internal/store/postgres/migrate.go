package postgres

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	pgmigrations "github.com/sketchd/sketchd/migrations/postgres"
)

// migrationLock is the advisory lock key under which nodes apply the
// schema, so that nodes starting together apply each step once
// ("sketchd" in ASCII).
const migrationLock = 0x736b65746368_64

// step is one versioned migration.
type step struct {
	version int
	name    string
	sql     string
}

// steps reads the embedded migrations in version order.
func steps() ([]step, error) {
	ents, err := fs.ReadDir(pgmigrations.FS, ".")
	if err != nil {
		return nil, err
	}
	var out []step
	for _, e := range ents {
		name := e.Name()
		head, _, ok := strings.Cut(name, "_")
		if !ok || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("postgres: migration %q is not named NNNN_what.sql", name)
		}
		v, err := strconv.Atoi(head)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("postgres: migration %q has no version", name)
		}
		b, err := fs.ReadFile(pgmigrations.FS, name)
		if err != nil {
			return nil, err
		}
		out = append(out, step{v, name, string(b)})
	}
	slices.SortFunc(out, func(a, b step) int { return a.version - b.version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("postgres: migrations %s and %s share a version", out[i-1].name, out[i].name)
		}
	}
	return out, nil
}

// migrate checks the hll extension and applies the migrations the
// database lacks, holding the advisory lock on one connection.
func migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	return migrateTo(ctx, pool, log, 0)
}

// migrateTo is migrate up to schema version upTo (0: the latest), for the
// tests that build a database as an older sketchd left it.
func migrateTo(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger, upTo int) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connecting: %w", err)
	}
	defer conn.Release()
	if err := ensureHLL(ctx, conn.Conn()); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLock)); err != nil {
		return fmt.Errorf("postgres: taking the migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrationLock))
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS sketchd_schema_migrations (
		version integer PRIMARY KEY,
		name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("postgres: creating sketchd_schema_migrations: %w", err)
	}
	all, err := steps()
	if err != nil {
		return err
	}
	rows, err := conn.Query(ctx, "SELECT version FROM sketchd_schema_migrations")
	if err != nil {
		return fmt.Errorf("postgres: reading the applied migrations: %w", err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return fmt.Errorf("postgres: reading the applied migrations: %w", err)
	}
	latest := all[len(all)-1].version
	for _, v := range applied {
		if int(v) > latest {
			return fmt.Errorf("postgres: the database has schema version %d; this sketchd knows up to %d (run a newer sketchd)", v, latest)
		}
	}
	for _, st := range all {
		if slices.Contains(applied, int32(st.version)) || upTo > 0 && st.version > upTo {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, st.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO sketchd_schema_migrations (version, name) VALUES ($1, $2)", st.version, st.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres: applying migration %s: %w", st.name, err)
		}
		log.Info("applied a schema migration", "migration", st.name)
	}
	return nil
}

// ensureHLL creates the hll extension if it is missing and this role may,
// or explains what to run.
func ensureHLL(ctx context.Context, conn *pgx.Conn) error {
	var have bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'hll')").Scan(&have); err != nil {
		return fmt.Errorf("postgres: checking for the hll extension: %w", err)
	}
	if have {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS hll"); err != nil {
		return fmt.Errorf("postgres: the database has no hll extension and this role cannot create it (%v); "+
			"install postgresql-hll on the server (Debian: apt-get install postgresql-15-hll) and run, as a superuser in this database: CREATE EXTENSION hll;", err)
	}
	return nil
}
