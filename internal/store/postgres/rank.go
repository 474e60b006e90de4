package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
)

// Ranking on the database (docs/postgres.md): with the sketchd_hll
// extension (pg/sketchd_hll) installed on the server, and on every Citus
// worker, a rank's candidates under a prefix are compared with the target
// where their rows live. Each row whose checksum holds (the function
// checks it) gives its joint table with the target (sketchd_hll_joint:
// about 500 bytes, where its registers are 10 KiB at log2m 14), computed
// on the worker that stores it; only the rows the function does not
// answer (another kind or shape, or a checksum that fails) travel whole,
// and are checked here as every read is. The node then fits each table (sketch.PairJoint), with the
// answer it gives the sketches themselves.

// jointExtension is the extension that provides sketchd_hll_joint.
const jointExtension = "sketchd_hll"

var (
	// jointSchemaSQL finds the schema the extension is in.
	jointSchemaSQL = `SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = '` + jointExtension + `'`
	// jointAvailableSQL: the server has the extension's files; hllSchemaSQL
	// is where hll is, which the extension goes beside.
	jointAvailableSQL = `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = '` + jointExtension + `')`
	hllSchemaSQL      = `SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'hll'`
	// jointOnWorkersSQL counts the Citus workers that lack the function.
	jointOnWorkersSQL = `SELECT count(*) FROM run_command_on_workers($$SELECT to_regprocedure('sketchd_hll_joint(hll, hll, bytea, bytea)') IS NOT NULL$$) WHERE NOT success OR result <> 't'`
)

// openJoint returns the schema-qualified name of sketchd_hll_joint, or ""
// when a rank must read the candidates themselves: the extension is not
// installed on the server (or on a Citus worker), or this role cannot
// create it. It creates the extension, beside hll, when the server has
// its files. Nothing here fails Open: a warning says what is missing.
func openJoint(ctx context.Context, conn *pgx.Conn, citus bool, log *slog.Logger) string {
	schema, err := jointSchema(ctx, conn)
	if err != nil {
		log.Warn("ranking reads every candidate on this node: cannot look up the sketchd_hll extension", "err", err)
		return ""
	}
	if schema == "" {
		var available bool
		if err := conn.QueryRow(ctx, jointAvailableSQL).Scan(&available); err != nil || !available {
			log.Info("ranking reads every candidate on this node: the server has no sketchd_hll extension (pg/sketchd_hll; docs/postgres.md)")
			return ""
		}
		var hllSchema string
		if err := conn.QueryRow(ctx, hllSchemaSQL).Scan(&hllSchema); err != nil {
			log.Warn("ranking reads every candidate on this node: cannot find the hll extension's schema", "err", err)
			return ""
		}
		_, cerr := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS "+jointExtension+" SCHEMA "+pgx.Identifier{hllSchema}.Sanitize())
		// Another node may have created it at the same moment.
		if schema, err = jointSchema(ctx, conn); err != nil || schema == "" {
			log.Warn("ranking reads every candidate on this node: cannot create the sketchd_hll extension (as a superuser: CREATE EXTENSION sketchd_hll)", "err", errors.Join(cerr, err))
			return ""
		}
	}
	if citus {
		var missing int
		if err := conn.QueryRow(ctx, jointOnWorkersSQL).Scan(&missing); err != nil || missing > 0 {
			log.Warn("ranking reads every candidate on this node: a Citus worker lacks the sketchd_hll extension (install pg/sketchd_hll on every worker)",
				"workers_without", missing, "err", err)
			return ""
		}
	}
	return pgx.Identifier{schema, "sketchd_hll_joint"}.Sanitize()
}

// jointSchema returns the extension's schema, "" when it is not created.
func jointSchema(ctx context.Context, conn *pgx.Conn) (string, error) {
	var schema string
	err := conn.QueryRow(ctx, jointSchemaSQL).Scan(&schema)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return schema, err
}

// JointSQL is the statement EachPrefixJoint runs, for the extension's
// function fn: every candidate under the prefix ($1..$4 as prefixWhere),
// each in one column: jointTag and its joint table with the target $5
// where the function answers (it checks the row's checksum itself), else
// rawTag and its stored bytes; and its checksum. One expression, so that
// the function runs once a row (PostgreSQL does not reuse a subquery's
// column that its planner inlines). No ORDER BY or LIMIT, so
// that on Citus every shard computes each of its rows' tables once,
// where the rows are.
func JointSQL(fn string) string {
	return `SELECT name, kind, coalesce('\x4a'::bytea || CASE WHEN kind = 'hll'
		THEN ` + fn + `($5::bytea::hll, hll, ` + sketchKeySQL("") + `, checksum) END, '\x52'::bytea || coalesce(hll_send(hll), data)), checksum
	FROM sketchd_sketches` + prefixWhere
}

// The first byte of JointSQL's third column: a joint table follows, or
// the row's stored bytes.
const (
	jointTag = 'J'
	rawTag   = 'R'
)

// RanksOnDatabase reports whether EachPrefixJoint computes joint tables
// on the database (the extension is there).
func (s *DB) RanksOnDatabase() bool { return s.jointFn != "" && !s.opts.RankOnNode }

// EachPrefixJoint is EachPrefix for a rank against target, a FULL HLL
// (sketch.JointTarget): fn gets each candidate's joint table with the
// target, computed on the database, or, for a candidate the table does
// not answer, the candidate itself (checked and decoded as EachPrefix
// does). ok is false, having read nothing, when the database cannot
// compute tables (RanksOnDatabase false, or the statement finds the
// function missing: jointMissing); the caller then uses EachPrefix.
// Candidates come in no particular order.
func (s *DB) EachPrefixJoint(ctx context.Context, prefix, exclude string, limit int, target *hll.Sketch,
	fn func(name string, j *sketch.Joint, sk sketch.Sketch) error) (n int, ok bool, err error) {
	if !s.RanksOnDatabase() {
		return 0, false, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, true, err
	}
	tb, err := target.MarshalBinary()
	if err != nil {
		return 0, true, err
	}
	end := prefix + "\x7f"
	now := s.opts.Now().UTC()
	var total int
	if err := s.pool.QueryRow(ctx, prefixCountSQL, prefix, exclude, end, now, limit+1).Scan(&total); err != nil {
		return 0, true, s.classify(ctx, err, "prefix scan")
	}
	if total > limit {
		return 0, true, sketch.TooManyWithPrefix(prefix, limit)
	}
	rows, err := s.pool.Query(ctx, JointSQL(s.jointFn), prefix, exclude, end, now, tb)
	if err != nil {
		if s.jointMissing(err) {
			return 0, false, nil
		}
		return 0, true, s.classify(ctx, err, "rank on the database")
	}
	defer rows.Close()
	p := target.Params()
	for rows.Next() {
		var name, kind string
		var tagged, sum []byte
		if err := rows.Scan(&name, &kind, &tagged, &sum); err != nil {
			return n, true, s.classify(ctx, err, "rank on the database")
		}
		// Rows added since the count are counted too.
		if n++; n > limit {
			return n, true, sketch.TooManyWithPrefix(prefix, limit)
		}
		if len(tagged) == 0 || tagged[0] != jointTag && tagged[0] != rawTag {
			return n, true, fmt.Errorf("postgres: the rank statement gave %q a value without its tag", name)
		}
		if tagged[0] == jointTag {
			j, err := sketch.DecodeJoint(tagged[1:], p)
			if err != nil {
				return n, true, fmt.Errorf("postgres: the sketchd_hll extension's joint table of %q with the target does not read (%w); install the extension from this sketchd's pg/sketchd_hll, or run with -postgres-rank-on-node", name, err)
			}
			if err := fn(name, j, nil); err != nil {
				return n, true, err
			}
			continue
		}
		sk, err := decodeRow(name, kind, tagged[1:], sum)
		if err != nil {
			return n, true, s.report(err, "prefix scan")
		}
		if err := fn(name, nil, sk); err != nil {
			return n, true, err
		}
	}
	if err := rows.Err(); err != nil {
		if n == 0 && s.jointMissing(err) {
			return 0, false, nil
		}
		return n, true, s.classify(ctx, err, "rank on the database")
	}
	return n, true, nil
}

// jointMissing reports whether err says the server, or a Citus worker,
// lacks the extension's function or library (a worker added since this
// node started, without it): the rank then reads the candidates on the
// node, and a warning says why.
func (s *DB) jointMissing(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42883" && pe.Code != "58P01" {
		return false
	}
	s.log.Warn("a rank read every candidate on this node: the database lacks the sketchd_hll extension somewhere (install pg/sketchd_hll on every worker)", "err", err)
	return true
}
