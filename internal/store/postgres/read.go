package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/sketch"
)

const selectState = `SELECT name, kind, metric, created_at, updated_at, coalesce(hll_send(hll), data),
	extract(epoch FROM expire_after)::bigint, expire_at FROM sketchd_sketches`

// scanState reads one row of selectState.
func scanState(rows pgx.Rows) (string, *state, error) {
	var name, kind string
	var b []byte
	st := &state{}
	var after *int64
	var at *time.Time
	if err := rows.Scan(&name, &kind, &st.metric, &st.created, &st.updated, &b, &after, &at); err != nil {
		return "", nil, err
	}
	st.expiry = expiryOf(after, at)
	sk, _, err := decodeLocked(kind, b, true)
	if err != nil {
		return "", nil, fmt.Errorf("sketch %q: %w", name, err)
	}
	st.sk = sk
	st.created, st.updated = st.created.UTC(), st.updated.UTC()
	return name, st, nil
}

// view runs fn with the committed states of names (in the given order,
// repeats allowed), read in one statement, so they are one consistent
// state of the database. A missing name is NotFound.
func (s *DB) view(ctx context.Context, names []string, fn func(sts []*state) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	uniq := sortedUnique(names)
	now := s.opts.Now()
	rows, err := s.pool.Query(ctx, selectState+" WHERE name = ANY($1)", uniq)
	if err != nil {
		return s.classify(ctx, err, "read")
	}
	found := make(map[string]*state, len(uniq))
	for rows.Next() {
		name, st, err := scanState(rows)
		if err != nil {
			rows.Close()
			return s.classify(ctx, err, "read")
		}
		if !st.expired(now) {
			found[name] = st // an expired sketch is gone, as if deleted
		}
	}
	if err := rows.Err(); err != nil {
		return s.classify(ctx, err, "read")
	}
	sts := make([]*state, len(names))
	for i, n := range names {
		if sts[i] = found[n]; sts[i] == nil {
			return notFound(n)
		}
	}
	for n, st := range found {
		s.remember(n, st.sk)
	}
	return fn(sts)
}

// Describe returns name's spec, state and estimate.
func (s *DB) Describe(ctx context.Context, name string) (sketch.Info, error) {
	var info sketch.Info
	err := s.view(ctx, []string{name}, func(sts []*state) error {
		info = sts[0].info(name)
		return nil
	})
	return info, err
}

// View runs fn with the committed sketches of names (in order, repeats
// allowed). The sketches are fn's to read while it runs.
func (s *DB) View(ctx context.Context, names []string, fn func([]sketch.Sketch) error) error {
	return s.view(ctx, names, func(sts []*state) error {
		sks := make([]sketch.Sketch, len(sts))
		for i, st := range sts {
			sks[i] = st.sk
		}
		return fn(sks)
	})
}

// List returns up to limit sketches whose names start with prefix and sort
// after after, in name order, and whether more follow.
func (s *DB) List(ctx context.Context, prefix, after string, limit int) ([]sketch.Info, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if limit < 0 {
		limit = 0
	}
	// Names are ASCII letters, digits and . _ : - (sketch.ValidateName),
	// all below 0x7f: every name with the prefix sorts before prefix+0x7f.
	q := selectState + ` WHERE name > $1 AND name >= $2 AND starts_with(name, $2) AND ` + live("$4")
	args := []any{after, prefix, limit + 1, s.opts.Now().UTC()}
	if prefix != "" {
		q += ` AND name < $5`
		args = append(args, prefix+"\x7f")
	}
	q += ` ORDER BY name LIMIT $3`
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, false, s.classify(ctx, err, "list")
	}
	var out []sketch.Info
	for rows.Next() {
		name, st, err := scanState(rows)
		if err != nil {
			rows.Close()
			return nil, false, s.classify(ctx, err, "list")
		}
		out = append(out, st.info(name))
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.classify(ctx, err, "list")
	}
	more := len(out) > limit
	return out[:min(limit, len(out))], more, nil
}

// SketchCounts calls yield for each (kind, representation) with its
// number of sketches, counted in the database (the counts of every node).
func (s *DB) SketchCounts(yield func(kind, representation string, n int)) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT kind, coalesce(hll_type(hll), -1), count(*) FROM sketchd_sketches GROUP BY 1, 2`)
	if err != nil {
		s.log.Warn("counting sketches for /metrics", "err", err)
		return
	}
	defer rows.Close()
	reps := [...]string{"UNDEFINED", "EMPTY", "EXPLICIT", "SPARSE", "FULL"}
	type count struct {
		kind, rep string
		n         int
	}
	var counts []count
	for rows.Next() {
		var kind string
		var typ int32
		var n int64
		if err := rows.Scan(&kind, &typ, &n); err != nil {
			s.log.Warn("counting sketches for /metrics", "err", err)
			return
		}
		rep := ""
		if kind == string(sketch.TypeHLL) && typ >= 0 && int(typ) < len(reps) {
			rep = reps[typ]
		}
		counts = append(counts, count{kind, rep, int(n)})
	}
	if rows.Err() != nil {
		s.log.Warn("counting sketches for /metrics", "err", rows.Err())
		return
	}
	for _, c := range counts {
		yield(c.kind, c.rep, c.n)
	}
}

// MetricQuantiles calls yield with the values at the fractions qs of
// every KLL sketch created with the metric flag that holds values
// (metrics.QuantileSource).
func (s *DB) MetricQuantiles(qs []float64, yield func(name string, q, value float64)) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, selectState+` WHERE metric AND kind = 'kll' ORDER BY name`)
	if err != nil {
		s.log.Warn("reading metric sketches' quantiles for /metrics", "err", err)
		return
	}
	type value struct {
		name string
		vs   []float64
	}
	var out []value
	for rows.Next() {
		name, st, err := scanState(rows)
		if err != nil {
			rows.Close()
			s.log.Warn("reading metric sketches' quantiles for /metrics", "err", err)
			return
		}
		if st.expired(s.opts.Now()) {
			continue
		}
		if vs := sketch.QuantilesOf(st.sk, qs); vs != nil {
			out = append(out, value{name, vs})
		}
	}
	if rows.Err() != nil {
		s.log.Warn("reading metric sketches' quantiles for /metrics", "err", rows.Err())
		return
	}
	for _, v := range out {
		for i, q := range qs {
			yield(v.name, q, v.vs[i])
		}
	}
}

// MetricEstimates calls yield with the current estimate of every sketch
// created with the metric flag (a CMS reports its total).
func (s *DB) MetricEstimates(yield func(name string, estimate float64)) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, selectState+` WHERE metric ORDER BY name`)
	if err != nil {
		s.log.Warn("reading metric sketches for /metrics", "err", err)
		return
	}
	type est struct {
		name string
		v    float64
	}
	var out []est
	for rows.Next() {
		name, st, err := scanState(rows)
		if err != nil {
			rows.Close()
			s.log.Warn("reading metric sketches for /metrics", "err", err)
			return
		}
		if !st.expired(s.opts.Now()) {
			out = append(out, est{name, st.sk.Estimate()})
		}
	}
	if rows.Err() != nil {
		s.log.Warn("reading metric sketches for /metrics", "err", rows.Err())
		return
	}
	for _, e := range out {
		yield(e.name, e.v)
	}
}

// scrapeTimeout bounds the queries a /metrics scrape runs.
const scrapeTimeout = 5 * time.Second

// prefixWhere selects the sketches whose names start with $1, except $2:
// a range scan of the primary key ($3 is $1 followed by 0x7f, above every
// name character; see List), so on Citus each shard scans its own index.
// $4 is the time the sketches must be live at (liveSQL).
var prefixWhere = ` WHERE name >= $1 AND name < $3 AND starts_with(name, $1) AND name <> $2
	AND ` + live("$4")

// prefixUnionSQL unions the HLLs under a prefix where they are stored:
// one row per (kind, parameters) among them, with how many sketches it
// covers, the least name (to name one in an error) and, for HLLs,
// postgresql-hll's union of the group (hll_union_agg takes one set of
// parameters). On Citus, each worker aggregates its shards and the
// coordinator merges one partial union per shard and group.
var prefixUnionSQL = `SELECT kind, hll_log2m(hll), hll_regwidth(hll), (hll_expthresh(hll)).specified, hll_sparseon(hll),
	count(*), min(name), hll_send(hll_union_agg(hll))
FROM sketchd_sketches` + prefixWhere + `
GROUP BY 1, 2, 3, 4, 5`

// prefixRowsSQL reads the sketches of one kind under a prefix, in name
// order, for kinds PostgreSQL cannot union.
var prefixRowsSQL = `SELECT name, data FROM sketchd_sketches` + prefixWhere + ` AND kind = $5 ORDER BY name`

// UnionPrefix returns the union of every sketch whose name starts with
// prefix, except exclude, and how many it unioned (see server.Store).
// HLLs are unioned in the database (prefixUnionSQL) and only one partial
// union per set of parameters comes to the node, which combines them as
// Union does. The other kinds are stored as bytes PostgreSQL cannot
// union: their rows are streamed to the node in name order and unioned a
// batch at a time. Each statement reads one committed state.
func (s *DB) UnionPrefix(ctx context.Context, prefix, exclude string, limit int) (sketch.Sketch, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	end := prefix + "\x7f"
	now := s.opts.Now().UTC()
	rows, err := s.pool.Query(ctx, prefixUnionSQL, prefix, exclude, end, now)
	if err != nil {
		return nil, 0, s.classify(ctx, err, "prefix union")
	}
	type group struct {
		kind, first string
		n           int64
		union       []byte
	}
	var groups []group
	total := 0
	for rows.Next() {
		var g group
		var log2m, regwidth, expthresh, sparse *int32
		if err := rows.Scan(&g.kind, &log2m, &regwidth, &expthresh, &sparse, &g.n, &g.first, &g.union); err != nil {
			rows.Close()
			return nil, 0, s.classify(ctx, err, "prefix union")
		}
		groups = append(groups, g)
		total += int(g.n)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, s.classify(ctx, err, "prefix union")
	}
	switch {
	case total == 0:
		return nil, 0, sketch.NoneWithPrefix(prefix)
	case total > limit:
		return nil, 0, sketch.TooManyWithPrefix(prefix, limit)
	}
	slices.SortFunc(groups, func(a, b group) int { return strings.Compare(a.first, b.first) })
	for _, g := range groups[1:] {
		if g.kind != groups[0].kind {
			return nil, 0, sketch.Errorf(sketch.Conflict, "cannot combine %s sketch %q with %s sketch %q", groups[0].kind, groups[0].first, g.kind, g.first)
		}
	}
	kind, err := sketch.Lookup(sketch.Type(groups[0].kind))
	if err != nil {
		return nil, 0, sketch.Wrap(sketch.Internal, err, "a stored sketch has an unknown kind")
	}
	var u sketch.Unioner
	if kind.Type == sketch.TypeHLL {
		for _, g := range groups {
			sk, err := kind.Decode(g.union)
			if err != nil {
				return nil, 0, sketch.Wrap(sketch.Internal, err, fmt.Sprintf("the union of the hlls from %q does not decode", g.first))
			}
			if err := u.Add(g.first, sk); err != nil {
				return nil, 0, err
			}
		}
		out, err := u.Result()
		return out, total, err
	}
	rows, err = s.pool.Query(ctx, prefixRowsSQL, prefix, exclude, end, now, string(kind.Type))
	if err != nil {
		return nil, 0, s.classify(ctx, err, "prefix union")
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var b []byte
		if err := rows.Scan(&name, &b); err != nil {
			return nil, 0, s.classify(ctx, err, "prefix union")
		}
		if u.Len() == limit {
			return nil, 0, sketch.TooManyWithPrefix(prefix, limit)
		}
		// One API type may be several kinds (kll of doubles or longs):
		// the bytes say which.
		k, err := sketch.LookupFor(kind.Type, b)
		if err != nil {
			return nil, 0, sketch.Wrap(sketch.Internal, err, fmt.Sprintf("sketch %q has an unknown kind", name))
		}
		sk, err := k.Decode(b)
		if err != nil {
			return nil, 0, sketch.Wrap(sketch.Internal, err, fmt.Sprintf("sketch %q does not decode", name))
		}
		if err := u.Add(name, sk); err != nil {
			return nil, 0, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, s.classify(ctx, err, "prefix union")
	}
	if u.Len() == 0 {
		return nil, 0, sketch.NoneWithPrefix(prefix)
	}
	out, err := u.Result()
	return out, u.Len(), err
}
