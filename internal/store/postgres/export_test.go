package postgres

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
)

// MigrateTo applies the schema to the database dsn names up to version
// only: the database as a sketchd of that schema version left it.
func MigrateTo(ctx context.Context, dsn string, version int) error {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	return migrateTo(ctx, pool, slog.New(slog.DiscardHandler), version)
}

// ReadRunsSQL is the statement a series read runs, for the test that
// checks its plan.
const ReadRunsSQL = readRunsSQL

// PrefixUnionSQL is the statement a prefix union of HLLs runs, for the
// test that explains it on Citus.
var PrefixUnionSQL = prefixUnionSQL

// Split runs the committer's split of a group of writes naming the given
// sketches and returns, for each write, the index of the part it went to
// and the number of parts.
func (s *DB) Split(writes [][]string) (part []int, parts int) {
	group := make([]*op, len(writes))
	at := map[*op]int{}
	for i, names := range writes {
		group[i] = &op{names: names}
		at[group[i]] = i
	}
	split := s.split(group)
	part = make([]int, len(writes))
	for p, ops := range split {
		for _, o := range ops {
			part[at[o]] = p
		}
	}
	return part, len(split)
}

// WholeGroups returns opts with the split of groups by worker turned off.
func WholeGroups(opts Options) Options {
	opts.wholeGroups = true
	return opts
}

// JointFunc is the function a rank runs on the database, "" without the
// sketchd_hll extension.
func (s *DB) JointFunc() string { return s.jointFn }

// SetJointFunc makes a rank on the database call fn, for the test of a
// database that lacks the function.
func (s *DB) SetJointFunc(fn string) { s.jointFn = fn }

// ForgetEstimates drops what the last /metrics scrape decoded, so that
// the next one decodes every metric sketch, as each scrape did before.
func (s *DB) ForgetEstimates() {
	s.estimatesMu.Lock()
	s.estimates = nil
	s.estimatesMu.Unlock()
}
