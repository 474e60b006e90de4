package postgres

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/sketch"
)

const selectState = `SELECT name, kind, metric, created_at, updated_at, coalesce(hll_send(hll), data),
	extract(epoch FROM expire_after)::bigint, expire_at, checksum FROM sketchd_sketches`

// scanState reads one row of selectState. A row whose value fails its
// checksum or does not decode gives its name, a state without a sketch
// (its expiry read, so that an expired row can still count as gone) and
// a Damaged error naming it; any other failure no state.
func scanState(rows pgx.Rows) (string, *state, error) {
	r, err := scanChecked(rows)
	if r.st == nil || err != nil {
		return r.name, r.st, err
	}
	sk, _, err := decodeLocked(r.kind, r.value, true)
	if err != nil {
		return r.name, r.st, damagedSketch(r.name, err)
	}
	r.st.sk = sk
	return r.name, r.st, nil
}

// stateRow is a row of selectState as read, its value not decoded
// (st.sk is nil).
type stateRow struct {
	name, kind string
	st         *state
	value, sum []byte
}

// scanChecked reads one row of selectState and checks its value against
// its checksum, as scanState does, but does not decode it.
func scanChecked(rows pgx.Rows) (stateRow, error) {
	var r stateRow
	r.st = &state{}
	var after *int64
	var at *time.Time
	if err := rows.Scan(&r.name, &r.kind, &r.st.metric, &r.st.created, &r.st.updated, &r.value, &after, &at, &r.sum); err != nil {
		return stateRow{}, err
	}
	r.st.expiry = expiryOf(after, at)
	r.st.created, r.st.updated = r.st.created.UTC(), r.st.updated.UTC()
	if err := verify(r.sum, sketchKey(r.name, r.kind), r.value); err != nil {
		return r, damagedSketch(r.name, err)
	}
	return r, nil
}

// view runs fn with the committed states of names (in the given order,
// repeats allowed), read in one statement, so they are one consistent
// state of the database. A missing name is NotFound, a damaged one
// Damaged.
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
	var held int64
	for rows.Next() {
		name, st, err := scanState(rows)
		if st == nil {
			rows.Close()
			return s.classify(ctx, err, "read")
		}
		if st.expired(now) {
			continue // an expired sketch is gone, as if deleted
		}
		if err != nil {
			rows.Close()
			return s.report(err, "read")
		}
		found[name] = st
		// A read of several sketches holds them all: at most the cache's
		// bound, checked as they arrive, so it never holds more than
		// that and one sketch.
		if held += st.sk.MemoryBytes(); len(uniq) > 1 && held > s.opts.CacheBytes {
			rows.Close()
			return sketch.Errorf(sketch.TooLarge, "the %d sketches this request names hold more than the %d MiB one request may hold at once (-cache-bytes); name fewer, or union a prefix, which reads one sketch at a time",
				len(uniq), s.opts.CacheBytes>>20)
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
	infos, more, _, err := s.ListSkipping(ctx, prefix, after, limit)
	return infos, more, err
}

// ListSkipping is List that also returns the names (quoted, safe to
// print) of the sketches in the range it skipped because their rows fail
// their checksums or do not decode; each is logged and counted. A page
// holds limit readable sketches when that many follow: it reads on past
// the damaged ones.
func (s *DB) ListSkipping(ctx context.Context, prefix, after string, limit int) (infos []sketch.Info, more bool, skipped []string, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, nil, err
	}
	limit = max(limit, 0)
	// Names are ASCII letters, digits and . _ : - (sketch.ValidateName),
	// all below 0x7f: every name with the prefix sorts before prefix+0x7f.
	q := selectState + ` WHERE name > $1 AND name >= $2 AND starts_with(name, $2) AND ` + live("$4")
	if prefix != "" {
		q += ` AND name < $5`
	}
	q += ` ORDER BY name LIMIT $3`
	now := s.opts.Now().UTC()
	for {
		want := limit + 1 - len(infos)
		args := []any{after, prefix, want, now}
		if prefix != "" {
			args = append(args, prefix+"\x7f")
		}
		rows, err := s.pool.Query(ctx, q, args...)
		if err != nil {
			return nil, false, nil, s.classify(ctx, err, "list")
		}
		n := 0
		for rows.Next() {
			name, st, err := scanState(rows)
			if st == nil {
				rows.Close()
				return nil, false, nil, s.classify(ctx, err, "list")
			}
			n++
			after = name
			if err != nil {
				s.skipped(err, "list")
				skipped = append(skipped, quote(name))
				continue
			}
			infos = append(infos, st.info(name))
		}
		if err := rows.Err(); err != nil {
			return nil, false, nil, s.classify(ctx, err, "list")
		}
		if n < want || len(infos) > limit {
			break
		}
	}
	more = len(infos) > limit
	return infos[:min(limit, len(infos))], more, skipped, nil
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
		if st == nil {
			rows.Close()
			s.log.Warn("reading metric sketches' quantiles for /metrics", "err", err)
			return
		}
		if st.expired(s.opts.Now()) {
			continue
		}
		if err != nil {
			s.skipped(err, "metrics")
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
	s.estimatesMu.Lock()
	last := s.estimates
	s.estimatesMu.Unlock()
	next := make(map[string]knownEstimate, len(last))
	for rows.Next() {
		r, err := scanChecked(rows)
		if r.st == nil {
			rows.Close()
			s.log.Warn("reading metric sketches for /metrics", "err", err)
			return
		}
		if err == nil {
			// A value whose checksum is the one the last scrape decoded
			// (and which matches it, as checked just now) has the same
			// bytes, so the same estimate: only a changed sketch is
			// decoded again.
			k, ok := last[r.name]
			if !ok || k.kind != r.kind || !bytes.Equal(k.sum, r.sum) {
				var sk sketch.Sketch
				if sk, _, err = decodeLocked(r.kind, r.value, true); err != nil {
					err = damagedSketch(r.name, err)
				} else {
					k = knownEstimate{kind: r.kind, sum: r.sum, v: sk.Estimate()}
				}
			}
			if err == nil {
				next[r.name] = k
			}
		}
		switch {
		case r.st.expired(s.opts.Now()):
		case err != nil:
			s.skipped(err, "metrics")
		default:
			out = append(out, est{r.name, next[r.name].v})
		}
	}
	if rows.Err() != nil {
		s.log.Warn("reading metric sketches for /metrics", "err", rows.Err())
		return
	}
	s.estimatesMu.Lock()
	s.estimates = next
	s.estimatesMu.Unlock()
	for _, e := range out {
		yield(e.name, e.v)
	}
}

// knownEstimate is a metric sketch's estimate as a scrape computed it,
// and the checksum of the value it decoded (DB.estimates).
type knownEstimate struct {
	kind string
	sum  []byte
	v    float64
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
// parameters). Each HLL's checksum is checked by the same statement, over
// the bytes it unions: the check is a grouping column (true, false, or
// NULL for a row without a checksum, and for kinds other than hll), so
// PostgreSQL computes it once per row and a damaged HLL lands in a group
// of its own, named by its least name. On Citus, each worker aggregates
// its shards and the coordinator merges one partial union per shard and
// group.
var prefixUnionSQL = `SELECT kind, checksum = ` + sumSQL(sketchKeySQL(""), "hll_send(hll)") + `,
	hll_log2m(hll), hll_regwidth(hll), (hll_expthresh(hll)).specified, hll_sparseon(hll),
	count(*), min(name), hll_send(hll_union_agg(hll))
FROM sketchd_sketches` + prefixWhere + `
GROUP BY 1, 2, 3, 4, 5, 6`

// prefixRowsSQL reads the sketches of one kind under a prefix, in name
// order, for kinds PostgreSQL cannot union, and for HLLs when the union
// in the database failed (prefixHLLRows), to find a damaged one.
var (
	prefixRowsSQL = `SELECT name, data, checksum FROM sketchd_sketches` + prefixWhere + ` AND kind = $5 ORDER BY name`
	prefixHLLRows = `SELECT name, hll_send(hll), checksum FROM sketchd_sketches` + prefixWhere + ` AND kind = 'hll' ORDER BY name`
)

// UnionPrefix returns the union of every sketch whose name starts with
// prefix, except exclude, and how many it unioned (see server.Store).
// HLLs are unioned in the database (prefixUnionSQL), which checks each
// one's checksum, and only one partial union per set of parameters comes
// to the node, which combines them as Union does. The other kinds are
// stored as bytes PostgreSQL cannot union: their rows are streamed to the
// node in name order, checked and unioned a batch at a time. Each
// statement reads one committed state. A damaged sketch under the prefix
// is a Damaged error naming it.
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
		ok          *bool
		n           int64
		union       []byte
	}
	var groups []group
	total := 0
	for rows.Next() {
		var g group
		var log2m, regwidth, expthresh, sparse *int32
		if err := rows.Scan(&g.kind, &g.ok, &log2m, &regwidth, &expthresh, &sparse, &g.n, &g.first, &g.union); err != nil {
			rows.Close()
			return nil, 0, s.unionFailed(ctx, err, prefix, exclude, end, now)
		}
		groups = append(groups, g)
		total += int(g.n)
	}
	if err := rows.Err(); err != nil {
		// postgresql-hll refuses some damaged values outright (an
		// unknown version or type in the header).
		return nil, 0, s.unionFailed(ctx, err, prefix, exclude, end, now)
	}
	slices.SortFunc(groups, func(a, b group) int { return strings.Compare(a.first, b.first) })
	for _, g := range groups {
		if g.kind == string(sketch.TypeHLL) && (g.ok == nil || !*g.ok) {
			why := errChecksum
			if g.ok == nil {
				why = fmt.Errorf("the row has no checksum: %w", errChecksum)
			}
			return nil, 0, s.report(damagedSketch(g.first, why), "prefix union")
		}
	}
	switch {
	case total == 0:
		return nil, 0, sketch.NoneWithPrefix(prefix)
	case total > limit:
		return nil, 0, sketch.TooManyWithPrefix(prefix, limit)
	}
	for _, g := range groups[1:] {
		if g.kind != groups[0].kind {
			return nil, 0, sketch.Errorf(sketch.Conflict, "cannot combine %s sketch %q with %s sketch %q", groups[0].kind, groups[0].first, g.kind, g.first)
		}
	}
	kind, err := sketch.Lookup(sketch.Type(groups[0].kind))
	if err != nil {
		return nil, 0, s.report(damagedSketch(groups[0].first, err), "prefix union")
	}
	var u sketch.Unioner
	if kind.Type == sketch.TypeHLL {
		for _, g := range groups {
			sk, err := kind.Decode(g.union)
			if err != nil {
				// Every HLL passed its checksum, but one of them, damaged
				// before it had one, unions into bytes sketchd does not
				// read: find it.
				err = sketch.Wrap(sketch.Internal, err, fmt.Sprintf("the union of the hlls from %q does not decode", g.first))
				return nil, 0, s.unionFailed(ctx, err, prefix, exclude, end, now)
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
		var b, sum []byte
		if err := rows.Scan(&name, &b, &sum); err != nil {
			return nil, 0, s.classify(ctx, err, "prefix union")
		}
		if u.Len() == limit {
			return nil, 0, sketch.TooManyWithPrefix(prefix, limit)
		}
		sk, err := decodeRow(name, string(kind.Type), b, sum)
		if err != nil {
			return nil, 0, s.report(err, "prefix union")
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

// eachPage is how many sketches EachPrefix asks for in one statement.
const eachPage = 256

var (
	// prefixCountSQL counts the sketches under a prefix, up to $5.
	prefixCountSQL = `SELECT count(*) FROM (SELECT 1 FROM sketchd_sketches` + prefixWhere + ` LIMIT $5) AS t`
	// prefixPageSQL reads a page of the sketches under a prefix after
	// the name $5, in name order: the primary key's range scan, so each
	// page costs what it returns.
	prefixPageSQL = `SELECT name, kind, coalesce(hll_send(hll), data), checksum FROM sketchd_sketches` + prefixWhere + `
	AND name > $5 ORDER BY name LIMIT $6`
)

// EachPrefix calls fn with each sketch whose name starts with prefix,
// except exclude, in name order, and returns how many it gave fn (see
// server.Store). One statement counts them and refuses more than limit
// before any is read; then they come in pages of eachPage, each a
// statement of its own, and each row is checked, decoded and given to fn
// as it arrives: the node holds one row and what the connection buffers,
// never the prefix. A damaged sketch is a Damaged error naming it.
func (s *DB) EachPrefix(ctx context.Context, prefix, exclude string, limit int, fn func(name string, sk sketch.Sketch) error) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	end := prefix + "\x7f"
	now := s.opts.Now().UTC()
	var total int
	if err := s.pool.QueryRow(ctx, prefixCountSQL, prefix, exclude, end, now, limit+1).Scan(&total); err != nil {
		return 0, s.classify(ctx, err, "prefix scan")
	}
	if total > limit {
		return 0, sketch.TooManyWithPrefix(prefix, limit)
	}
	n, after := 0, ""
	for {
		rows, err := s.pool.Query(ctx, prefixPageSQL, prefix, exclude, end, now, after, eachPage)
		if err != nil {
			return n, s.classify(ctx, err, "prefix scan")
		}
		got := 0
		for rows.Next() {
			var name, kind string
			var b, sum []byte
			if err := rows.Scan(&name, &kind, &b, &sum); err != nil {
				rows.Close()
				return n, s.classify(ctx, err, "prefix scan")
			}
			got++
			after = name
			if n++; n > limit {
				rows.Close()
				return n, sketch.TooManyWithPrefix(prefix, limit)
			}
			sk, err := decodeRow(name, kind, b, sum)
			if err != nil {
				rows.Close()
				return n, s.report(err, "prefix scan")
			}
			if err := fn(name, sk); err != nil {
				rows.Close()
				return n, err
			}
		}
		if err := rows.Err(); err != nil {
			return n, s.classify(ctx, err, "prefix scan")
		}
		if got < eachPage {
			return n, nil
		}
	}
}

// decodeRow checks and decodes the stored value b of the sketch name of
// kind (the kind column), whose checksum column holds sum: a Damaged
// error if it fails either.
func decodeRow(name, kind string, b, sum []byte) (sketch.Sketch, error) {
	if err := verify(sum, sketchKey(name, kind), b); err != nil {
		return nil, damagedSketch(name, err)
	}
	sk, _, err := decodeLocked(kind, b, true)
	if err != nil {
		return nil, damagedSketch(name, err)
	}
	return sk, nil
}

// checkedRow is decodeRow for a reader that needs only to know the row
// would read back (a backup): its checksum, then checkStored. It returns
// the sketch's parameters.
func checkedRow(name, kind string, b, sum []byte) (sketch.Params, error) {
	if err := verify(sum, sketchKey(name, kind), b); err != nil {
		return nil, damagedSketch(name, err)
	}
	p, err := checkStored(kind, b)
	if err != nil {
		return nil, damagedSketch(name, err)
	}
	return p, nil
}

// checkStored is decodeLocked(kindName, b, true) for a reader that needs
// only the sketch's parameters and to know it would decode: the kind's
// Check, which does not build the sketch (a FULL HLL's registers are not
// unpacked).
func checkStored(kindName string, b []byte) (sketch.Params, error) {
	kind, err := storedKind(kindName, b)
	if err != nil {
		return nil, err
	}
	p, err := kind.Checked(b)
	if err != nil {
		return nil, sketch.Wrap(sketch.Internal, err, "a stored sketch does not decode")
	}
	return p, nil
}

// unionFailed is the error of a prefix union of HLLs that PostgreSQL
// could not compute or whose result sketchd cannot read (err): the
// HLLs under the prefix are read one by one, in name order, and the
// first that fails its checksum or does not decode is a Damaged error
// naming it. If none does, err stands.
func (s *DB) unionFailed(ctx context.Context, err error, prefix, exclude, end string, now time.Time) error {
	if ctx.Err() != nil || transient(err) {
		return s.classify(ctx, err, "prefix union")
	}
	rows, qerr := s.pool.Query(ctx, prefixHLLRows, prefix, exclude, end, now)
	if qerr != nil {
		return s.classify(ctx, err, "prefix union")
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var b, sum []byte
		if rows.Scan(&name, &b, &sum) != nil {
			break
		}
		if _, derr := decodeRow(name, string(sketch.TypeHLL), b, sum); derr != nil {
			return s.report(derr, "prefix union")
		}
	}
	return s.classify(ctx, err, "prefix union")
}
