package postgres_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// logBuffer collects a store's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// onBackends runs fn on a fresh schema of plain PostgreSQL and of the
// Citus coordinator SKETCHD_CITUS_DSN names (skipped without one), where
// the migrations distribute the tables.
func onBackends(t *testing.T, fn func(t *testing.T, dsn string)) {
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, pgstoretest.Schema(t, t.TempDir()))
	})
	t.Run("citus", func(t *testing.T) {
		t.Parallel()
		fn(t, pgstoretest.CitusSchema(t, t.TempDir()))
	})
}

// nodes opens n stores over dsn, logging to logs.
func nodes(t *testing.T, dsn string, n int, logs *logBuffer) []*postgres.DB {
	t.Helper()
	dbs := make([]*postgres.DB, n)
	for i := range dbs {
		db, err := postgres.Open(ctx, dsn, postgres.Options{MaxConns: 3, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	return dbs
}

// flipSQL XORs $2 into byte $1 of the stored value of a row (its hll or
// data column), with SQL, as damage made above the storage layer would;
// the row is chosen by the condition appended ($3 on).
const flipSQL = `SET
	hll = CASE WHEN hll IS NOT NULL THEN set_byte(hll_send(hll), $1, get_byte(hll_send(hll), $1) # $2)::hll END,
	data = CASE WHEN data IS NOT NULL THEN set_byte(data, $1, get_byte(data, $1) # $2) END
WHERE `

// flipSketch flips byte at of the sketch name's stored value with mask.
func flipSketch(t testing.TB, db *postgres.DB, name string, at int, mask byte) {
	t.Helper()
	tag, err := db.Pool().Exec(ctx, `UPDATE sketchd_sketches `+flipSQL+`name = $3`, at, int(mask), name)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("flipping byte %d of %s: %v, %v", at, name, tag, err)
	}
}

// flipBucket flips byte at of a bucket's stored value with mask.
func flipBucket(t testing.TB, db *postgres.DB, name string, k series.Key, at int, mask byte) {
	t.Helper()
	tag, err := db.Pool().Exec(ctx, `UPDATE sketchd_series_buckets `+flipSQL+`series = $3 AND level = $4 AND start = $5`, at, int(mask), name, k.Level.String(), k.Start)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("flipping byte %d of a bucket of %s: %v, %v", at, name, tag, err)
	}
}

// storedLen is the length of the stored value of the row of table where
// cond holds.
func storedLen(t testing.TB, db *postgres.DB, table, cond string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Pool().QueryRow(ctx, `SELECT octet_length(coalesce(hll_send(hll), data)) FROM `+table+` WHERE `+cond, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// offsets are the bytes of a value of n bytes the tests flip: every one
// of a short value; of a longer one the first and last 8 (headers,
// lengths, trailers) and 8 at random; of one over 4 KiB (a default
// Bloom filter is 1.2 MB) 4, 4 and 4.
func offsets(r *rand.Rand, n int) []int {
	if n <= 24 {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	k := 8
	if n > 4096 {
		k = 4
	}
	var out []int
	for i := range k {
		out = append(out, i, n-1-i)
	}
	for range k {
		out = append(out, k+r.IntN(n-2*k))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// flipOffsets is offsets, cut under the race detector to the first and
// the last: every read and write still meets a damaged value of every
// kind there, and scripts/test runs the whole sweep in a normal build.
func flipOffsets(r *rand.Rand, n int) []int {
	out := offsets(r, n)
	if raceEnabled && len(out) > 2 {
		out = []int{out[0], out[len(out)-1]}
	}
	return out
}

// wantDamaged fails t unless err is a Damaged error whose client-safe
// detail names label.
func wantDamaged(t testing.TB, err error, label, what string) {
	t.Helper()
	var se *sketch.Error
	if !errors.As(err, &se) || se.Kind != sketch.Damaged || !strings.Contains(se.Detail, label+" is damaged") {
		t.Errorf("%s = %v, want a Damaged error naming %s", what, err, label)
	}
}

// rawOf returns name's stored bytes as a read gives them.
func rawOf(t testing.TB, db *postgres.DB, name string) []byte {
	t.Helper()
	var b []byte
	if err := db.View(ctx, []string{name}, func(sks []sketch.Sketch) error { b = sks[0].AppendBinary(nil); return nil }); err != nil {
		t.Fatal(err)
	}
	return b
}

// flipTarget is a sketch the damage tests damage, and what it holds.
type flipTarget struct {
	name string
	spec sketch.Spec
	ids  storetest.Input
	rep  string // the HLL representation it must have, if any
}

// flipTargets is a sketch of every registered kind with ids in it, and an
// HLL of each representation.
func flipTargets() []flipTarget {
	hp := func(log2m int, expthresh int64) sketch.Spec {
		p := hll.DefaultParams()
		p.Log2m, p.Expthresh = log2m, expthresh
		return sketch.Spec{Params: sketch.HLLParams{Params: p}}
	}
	out := []flipTarget{
		{"hll-empty", hp(11, -1), storetest.Input{}, "EMPTY"},
		{"hll-explicit", hp(11, -1), storetest.Ints(0, 5), "EXPLICIT"},
		{"hll-sparse", hp(14, 0), storetest.Ints(0, 300), "SPARSE"},
		{"hll-full", hp(11, -1), storetest.Ints(0, 20000), "FULL"},
	}
	for _, k := range sketch.Kinds() {
		if k.Type != sketch.TypeHLL {
			out = append(out, flipTarget{name: fmt.Sprintf("k-%s-%d", k.Type, k.Tag), spec: sketch.Spec{Params: k.Default()}, ids: storetest.Ints(0, 3000)})
		}
	}
	return out
}

// TestDamagedSketchIsLoud: one byte of the stored value of a sketch of
// every kind (and of an HLL in each representation), flipped with SQL at
// many offsets, makes every read of it (describe, raw, union by name and
// into, prefix union, listing) and every write but a delete a Damaged
// error naming the sketch, logged and counted, on both nodes, while its
// sibling reads as before; the listing names it and goes on. Flipped
// back, it reads exactly as before: the failed writes changed nothing.
// Then DELETE removes it. Before sketchd kept checksums, most of these
// flips were served silently. Under the race detector only the first
// and last offsets are flipped (flipOffsets).
func TestDamagedSketchIsLoud(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, dsn string) {
		var logs logBuffer
		dbs := nodes(t, dsn, 2, &logs)
		db := dbs[0]
		r := rand.New(rand.NewPCG(5, 0))
		for _, tg := range flipTargets() {
			sib := tg.name + ".2"
			for _, n := range []string{tg.name, sib} {
				spec := tg.spec
				spec.Metric = true
				if _, _, err := db.Create(ctx, n, spec); err != nil {
					t.Fatal(err)
				}
				if len(tg.ids.IDs) > 0 {
					if _, err := db.Add(ctx, n, tg.ids, false); err != nil {
						t.Fatal(err)
					}
				}
			}
			info, err := db.Describe(ctx, tg.name)
			if err != nil {
				t.Fatal(err)
			}
			if tg.rep != "" && info.Representation != tg.rep {
				t.Fatalf("%s is %s", tg.name, info.Representation)
			}
			want := rawOf(t, db, tg.name)
			empty, err := tg.spec.New()
			if err != nil {
				t.Fatal(err)
			}
			label := `sketch "` + tg.name + `"`
			for _, at := range flipOffsets(r, storedLen(t, db, "sketchd_sketches", "name = $1", tg.name)) {
				mask := byte(1 + r.IntN(255))
				where := fmt.Sprintf("%s, byte %d ^ %#02x", tg.name, at, mask)
				before := db.ChecksumFailures()
				flipSketch(t, db, tg.name, at, mask)
				_, err := db.Describe(ctx, tg.name)
				wantDamaged(t, err, label, where+": Describe")
				wantDamaged(t, db.View(ctx, []string{tg.name}, func([]sketch.Sketch) error { return nil }), label, where+": View")
				_, err = db.Union(ctx, []string{sib, tg.name}, "")
				wantDamaged(t, err, label, where+": Union")
				_, err = db.Union(ctx, []string{sib, tg.name}, sib)
				wantDamaged(t, err, label, where+": Union into")
				_, _, err = db.UnionPrefix(ctx, tg.name, "", 10)
				wantDamaged(t, err, label, where+": UnionPrefix")
				for i, node := range dbs {
					_, err = node.Add(ctx, tg.name, storetest.Ints(5000, 5010), false)
					wantDamaged(t, err, label, fmt.Sprintf("%s: Add on node %d", where, i))
				}
				_, _, err = db.Put(ctx, tg.name, empty)
				wantDamaged(t, err, label, where+": Put")
				_, err = db.AddEvents(ctx, []sketch.Event{{ID: cms.IntID(9), Sketches: []string{sib, tg.name}}}, false)
				wantDamaged(t, err, label, where+": AddEvents")
				infos, more, skipped, err := db.ListSkipping(ctx, tg.name, "", 10)
				if err != nil || more || len(infos) != 1 || infos[0].Name != sib || !slices.Equal(skipped, []string{strconv.Quote(tg.name)}) {
					t.Errorf("%s: ListSkipping = %d infos, %v, skipped %v, %v; want %s listed and %s skipped", where, len(infos), more, skipped, err, sib, tg.name)
				}
				var estimates []string
				db.MetricEstimates(func(name string, _ float64) {
					if strings.HasPrefix(name, tg.name) {
						estimates = append(estimates, name)
					}
				})
				if !slices.Equal(estimates, []string{sib}) {
					t.Errorf("%s: /metrics estimates %v, want only %s", where, estimates, sib)
				}
				if got := db.ChecksumFailures() - before; got < 9 {
					t.Errorf("%s: %d checksum failures counted, want one for each of at least 9 reads", where, got)
				}
				flipSketch(t, db, tg.name, at, mask)
				if got := rawOf(t, dbs[1], tg.name); !bytes.Equal(got, want) {
					t.Fatalf("%s: restored, it reads %x, want %x (a refused write changed it)", where, clip(got), clip(want))
				}
			}
			if _, err := db.Describe(ctx, sib); err != nil {
				t.Errorf("%s: the sibling of a damaged sketch: %v", tg.name, err)
			}
		}
		for _, want := range []string{`"msg":"stored record is unreadable"`, `"entry":"sketch \"hll-full\""`, `"table":"sketchd_sketches"`, `"during":"prefix union"`, `"during":"list"`} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("the log lacks %s", want)
			}
		}
		if db.UnreadableRecords() == 0 {
			t.Error("UnreadableRecords() = 0 after listings that skipped damaged sketches")
		}
		// DELETE removes a damaged sketch, for good.
		flipSketch(t, db, "hll-full", 100, 0x10)
		if err := dbs[1].Delete(ctx, "hll-full"); err != nil {
			t.Fatalf("Delete(damaged) = %v", err)
		}
		if _, err := db.Describe(ctx, "hll-full"); sketch.KindOf(err) != sketch.NotFound {
			t.Errorf("Describe after deleting a damaged sketch = %v, want NotFound", err)
		}
	})
}

// clip returns at most the first 48 bytes of b.
func clip(b []byte) []byte { return b[:min(len(b), 48)] }

// TestUndecodableWithChecksum: a value whose checksum matches but which
// does not decode (damaged before the checksums were added, or written
// from SQL with a fresh checksum) is a Damaged error too, saying so; an
// HLL of them makes PostgreSQL's prefix union fail, and the node then
// finds and names it.
func TestUndecodableWithChecksum(t *testing.T) {
	onBackends(t, func(t *testing.T, dsn string) {
		var logs logBuffer
		dbs := nodes(t, dsn, 1, &logs)
		db := dbs[0]
		for _, n := range []string{"p.a", "p.b", "c.a", "c.b"} {
			spec := hllSpec(11)
			if n[0] == 'c' {
				spec = cmsSpec()
			}
			if _, _, err := db.Create(ctx, n, spec); err != nil {
				t.Fatal(err)
			}
		}
		// Schema version 2 in the header, which both postgresql-hll and
		// sketchd refuse, and a Count-Min of one byte; each with the
		// checksum of its bytes, as docs/postgres.md computes it.
		for _, st := range []string{
			`UPDATE sketchd_sketches SET hll = '\x218b7f'::bytea::hll WHERE name = 'p.b'`,
			`UPDATE sketchd_sketches SET data = '\x07' WHERE name = 'c.b'`,
			`UPDATE sketchd_sketches SET checksum = ` + sketchChecksumSQL + ` WHERE name IN ('p.b', 'c.b')`,
		} {
			if _, err := db.Pool().Exec(ctx, st); err != nil {
				t.Fatalf("%s: %v", st, err)
			}
		}
		for _, p := range []string{"p.", "c."} {
			label := `sketch "` + p + `b"`
			_, err := db.Describe(ctx, p+"b")
			wantDamaged(t, err, label, p+"b: Describe")
			var se *sketch.Error
			if errors.As(err, &se) && !strings.Contains(se.Detail, "cannot be decoded") {
				t.Errorf("Describe(%sb): %q does not say the value cannot be decoded", p, se.Detail)
			}
			_, _, err = db.UnionPrefix(ctx, p, "", 10)
			wantDamaged(t, err, label, p+": UnionPrefix")
		}
		if n := db.ChecksumFailures(); n != 0 {
			t.Errorf("ChecksumFailures() = %d for values whose checksums match", n)
		}
	})
}

// sketchChecksumSQL is the checksum of a sketch row from its columns, as
// docs/postgres.md gives it to SQL writers (and migration 0005 computes
// it): PostgreSQL's own md5, not sketchd's code.
const sketchChecksumSQL = `decode(md5(decode(md5('sketch ' || name || ' ' || kind), 'hex') || coalesce(hll_send(hll), data)), 'hex')`

// bucketChecksumSQL is the same for a series bucket, definitionChecksumSQL
// for a series definition and keyChecksumSQL for an idempotency key's
// answer.
const (
	bucketChecksumSQL = `decode(md5(decode(md5('bucket ' || series || ' ' || level || ' ' || (extract(epoch FROM start - 'epoch'::timestamptz) * 1000000)::bigint::text), 'hex')
		|| coalesce(hll_send(hll), data)), 'hex')`
	definitionChecksumSQL = `decode(md5(decode(md5('series ' || name || ' ' || kind || ' ' || tz || ' ' || late_limit || ' ' || levels::text), 'hex') || proto), 'hex')`
	keyChecksumSQL        = `decode(md5(decode(md5('key ' || target || ' ' || scope || ' ' || idempotency_key), 'hex') || fingerprint || answer), 'hex')`
)

// seriesFlipSpec is a series of hourly buckets of params, in UTC.
func seriesFlipSpec(t *testing.T, params sketch.Params) *series.Spec {
	t.Helper()
	spec := &series.Spec{Params: params, TZ: "UTC", Levels: []series.LevelSpec{{Level: series.Hour, Retention: series.Duration{Days: 2}}}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return spec
}

// viewBucket reads the bucket k of name (nil if it is absent).
func viewBucket(db *postgres.DB, name string, k series.Key) (sketch.Sketch, error) {
	var out sketch.Sketch
	err := db.ViewSeries(ctx, name, func(*series.Spec) ([]series.Run, error) {
		return []series.Run{{Level: k.Level, First: k.Start, Last: k.Start, Count: 1}}, nil
	}, func(_ *series.Spec, bs []series.Bucket) error {
		for _, b := range bs {
			out = b.Sketch.Clone()
		}
		return nil
	})
	return out, err
}

// importAt is a prepare function importing sk as the bucket k.
func importAt(k series.Key, sk sketch.Sketch) func(*series.Spec) ([]series.Import, error) {
	return func(*series.Spec) ([]series.Import, error) { return []series.Import{{Key: k, Sketch: sk}}, nil }
}

// TestDamagedBucketIsLoud: one byte of a series bucket of every kind,
// flipped with SQL at many offsets, makes every read of the series
// (range read, describe, listing) and every write to the bucket (add,
// merging and replacing import, events) a Damaged error naming the
// bucket, on both nodes (one of which had the bucket cached, the other
// not), while the series' other bucket reads as before. Flipped back, the
// bucket reads exactly as before. Under the race detector only the first
// and last offsets are flipped (flipOffsets).
func TestDamagedBucketIsLoud(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, dsn string) {
		var logs logBuffer
		dbs := nodes(t, dsn, 2, &logs)
		db := dbs[0]
		r := rand.New(rand.NewPCG(6, 0))
		now := time.Now().UTC()
		hour := now.Truncate(time.Hour)
		k := series.Key{Level: series.Hour, Start: hour}
		prev := series.Key{Level: series.Hour, Start: hour.Add(-time.Hour)}
		for _, kind := range sketch.Kinds() {
			name := fmt.Sprintf("s-%s-%d", kind.Type, kind.Tag)
			spec := seriesFlipSpec(t, kind.Default())
			if _, _, err := db.CreateSeries(ctx, name, spec); err != nil {
				t.Fatal(err)
			}
			for _, ts := range []time.Time{hour, prev.Start} {
				if _, err := db.AddSeries(ctx, name, ts, storetest.Ints(0, 300)); err != nil {
					t.Fatal(err)
				}
			}
			want, err := viewBucket(db, name, k) // cached on node 0
			if err != nil || want == nil {
				t.Fatalf("%s: %v, %v", name, want, err)
			}
			wantBytes := want.AppendBinary(nil)
			label := fmt.Sprintf("bucket hour %s of series %q", hour.Format(time.RFC3339), name)
			for _, at := range flipOffsets(r, storedLen(t, db, "sketchd_series_buckets", "series = $1 AND level = 'hour' AND start = $2", name, hour)) {
				mask := byte(1 + r.IntN(255))
				where := fmt.Sprintf("%s, byte %d ^ %#02x", name, at, mask)
				flipBucket(t, db, name, k, at, mask)
				for i, node := range dbs {
					_, err := viewBucket(node, name, k)
					wantDamaged(t, err, label, fmt.Sprintf("%s: ViewSeries on node %d", where, i))
					_, err = node.AddSeries(ctx, name, hour, storetest.Ints(1000, 1010))
					wantDamaged(t, err, label, fmt.Sprintf("%s: AddSeries on node %d", where, i))
				}
				_, err := db.DescribeSeries(ctx, name)
				wantDamaged(t, err, label, where+": DescribeSeries")
				for _, replace := range []bool{false, true} {
					_, err = db.ImportSeries(ctx, name, replace, importAt(k, want))
					wantDamaged(t, err, label, fmt.Sprintf("%s: ImportSeries (replace %t)", where, replace))
				}
				_, err = db.AddEvents(ctx, []sketch.Event{{ID: cms.IntID(1), Series: &sketch.EventSeries{Names: []string{name}, TS: hour}}}, false)
				wantDamaged(t, err, label, where+": AddEvents")
				infos, _, skipped, err := db.ListSeriesSkipping(ctx, name, "", 10)
				if err != nil || len(infos) != 0 || !slices.Equal(skipped, []string{strconv.Quote(name)}) {
					t.Errorf("%s: ListSeriesSkipping = %d infos, skipped %v, %v; want %s skipped", where, len(infos), skipped, err, name)
				}
				if sk, err := viewBucket(dbs[1], name, prev); err != nil || sk == nil {
					t.Errorf("%s: the series' other bucket: %v, %v", where, sk, err)
				}
				flipBucket(t, db, name, k, at, mask)
				for i, node := range dbs {
					got, err := viewBucket(node, name, k)
					if err != nil || got == nil || !bytes.Equal(got.AppendBinary(nil), wantBytes) {
						t.Fatalf("%s: restored, node %d reads %v, %v; want the bucket as before (a refused write changed it)", where, i, got, err)
					}
				}
			}
		}
		if !strings.Contains(logs.String(), `"table":"sketchd_series_buckets"`) || dbs[0].ChecksumFailures() == 0 || dbs[1].ChecksumFailures() == 0 {
			t.Errorf("checksum failures %d, %d; log:\n%.2000s", dbs[0].ChecksumFailures(), dbs[1].ChecksumFailures(), logs.String())
		}
		// DELETE removes a series with a damaged bucket.
		name := fmt.Sprintf("s-%s-%d", sketch.TypeHLL, sketch.Kinds()[0].Tag)
		flipBucket(t, db, name, k, 3, 1)
		if err := dbs[1].DeleteSeries(ctx, name); err != nil {
			t.Fatalf("DeleteSeries with a damaged bucket = %v", err)
		}
		if _, err := db.DescribeSeries(ctx, name); sketch.KindOf(err) != sketch.NotFound {
			t.Errorf("DescribeSeries after the delete = %v, want NotFound", err)
		}
	})
}

// TestDamagedDefinitionIsLoud: a series definition changed with SQL (a
// byte of its empty sketch, its zone, its late limit, a retention) makes
// every read and write of the series a Damaged error naming it; changed
// back, the series works as before.
func TestDamagedDefinitionIsLoud(t *testing.T) {
	onBackends(t, func(t *testing.T, dsn string) {
		var logs logBuffer
		dbs := nodes(t, dsn, 2, &logs)
		db := dbs[0]
		hour := time.Now().UTC().Truncate(time.Hour)
		for _, p := range []sketch.Params{hllSpec(11).Params, cmsSpec().Params} {
			name := "d-" + string(p.Kind().Type)
			if _, _, err := db.CreateSeries(ctx, name, seriesFlipSpec(t, p)); err != nil {
				t.Fatal(err)
			}
			if _, err := db.AddSeries(ctx, name, hour, storetest.Ints(0, 10)); err != nil {
				t.Fatal(err)
			}
			label := `series "` + name + `"`
			var proto []byte
			var tz, late, levels string
			if err := db.Pool().QueryRow(ctx, `SELECT proto, tz, late_limit, levels::text FROM sketchd_series WHERE name = $1`, name).Scan(&proto, &tz, &late, &levels); err != nil {
				t.Fatal(err)
			}
			for _, damage := range []string{
				`proto = set_byte(proto, 1, get_byte(proto, 1) # 4)`,
				`tz = 'UTD'`,
				`late_limit = 'PT2H'`,
				`levels = '[{"level": "hour", "retention": "P3D"}]'`,
			} {
				if _, err := db.Pool().Exec(ctx, `UPDATE sketchd_series SET `+damage+` WHERE name = $1`, name); err != nil {
					t.Fatal(err)
				}
				for i, node := range dbs {
					_, err := viewBucket(node, name, series.Key{Level: series.Hour, Start: hour})
					wantDamaged(t, err, label, fmt.Sprintf("%s, %s: ViewSeries on node %d", name, damage, i))
					_, err = node.AddSeries(ctx, name, hour, storetest.Ints(0, 10))
					wantDamaged(t, err, label, fmt.Sprintf("%s, %s: AddSeries on node %d", name, damage, i))
				}
				_, err := db.DescribeSeries(ctx, name)
				wantDamaged(t, err, label, name+", "+damage+": DescribeSeries")
				_, err = db.ChangeSeries(ctx, name, series.Change{})
				wantDamaged(t, err, label, name+", "+damage+": ChangeSeries")
				if _, err := db.Pool().Exec(ctx, `UPDATE sketchd_series SET proto = $2, tz = $3, late_limit = $4, levels = $5::jsonb WHERE name = $1`,
					name, proto, tz, late, levels); err != nil {
					t.Fatal(err)
				}
				if _, err := dbs[1].AddSeries(ctx, name, hour, storetest.Ints(0, 10)); err != nil {
					t.Errorf("%s, %s undone: %v", name, damage, err)
				}
			}
		}
		if !strings.Contains(logs.String(), `"entry":"series \"d-cms\""`) {
			t.Errorf("the log lacks the damaged definition:\n%.2000s", logs.String())
		}
	})
}

// TestDamagedKeyIsLoud: an idempotency key whose stored answer is
// changed with SQL is a Damaged error naming the key, never a replay of
// the changed answer.
func TestDamagedKeyIsLoud(t *testing.T) {
	onBackends(t, func(t *testing.T, dsn string) {
		var logs logBuffer
		db := nodes(t, dsn, 1, &logs)[0]
		kctx, g := keyed("k1", "key-1")
		if _, _, err := db.Create(kctx, "k1", cmsSpec()); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := db.Remembered(ctx, g.ID); !ok || err != nil {
			t.Fatalf("Remembered = %v, %v", ok, err)
		}
		if _, err := db.Pool().Exec(ctx, `UPDATE sketchd_idempotency SET answer = set_byte(answer, 0, get_byte(answer, 0) # 1)`); err != nil {
			t.Fatal(err)
		}
		_, _, err := db.Remembered(ctx, g.ID)
		wantDamaged(t, err, `idempotency key "key-1" of "k1"`, "Remembered")
	})
}

// TestChecksumsUnderConcurrentWrites: two stores on one database write
// sketches of every kind and series at once, on every write path (HLL
// adds merged in the database with and without a lock, read-modify-write
// adds, puts, merges, unions into, events, series adds, imports, PATCH,
// keyed writes); then no read anywhere reports damage, and every stored
// checksum equals the one PostgreSQL computes from the row with the
// expressions docs/postgres.md gives (its own md5, not sketchd's code).
func TestChecksumsUnderConcurrentWrites(t *testing.T) {
	onBackends(t, func(t *testing.T, dsn string) {
		var logs logBuffer
		dbs := nodes(t, dsn, 2, &logs)
		hour := time.Now().UTC().Truncate(time.Hour)
		var names []string
		for _, tg := range flipTargets() {
			if _, _, err := dbs[0].Create(ctx, tg.name, tg.spec); err != nil {
				t.Fatal(err)
			}
			names = append(names, tg.name)
		}
		for _, p := range []sketch.Params{hllSpec(11).Params, cmsSpec().Params} {
			if _, _, err := dbs[0].CreateSeries(ctx, "s-"+string(p.Kind().Type), seriesFlipSpec(t, p)); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Go(func() {
				db := dbs[w%2]
				r := rand.New(rand.NewPCG(uint64(w), 9))
				for i := range 25 {
					tg := names[r.IntN(len(names))]
					ids := storetest.Ints(int64(w*1000+i*10), int64(w*1000+i*10+1+r.IntN(30)))
					var err error
					switch i % 9 {
					case 0, 1:
						_, err = db.Add(ctx, tg, ids, false)
					case 2:
						_, err = db.Add(ctx, names[r.IntN(4)], ids, false) // an HLL
					case 3:
						_, err = db.AddEvents(ctx, []sketch.Event{{ID: cms.IntID(int64(i)), Sketches: names[:4], Series: &sketch.EventSeries{Names: []string{"s-hll", "s-cms"}}}}, false)
					case 4:
						_, err = db.AddSeries(ctx, []string{"s-hll", "s-cms"}[r.IntN(2)], hour, ids)
					case 5:
						var sk sketch.Sketch
						if err = db.View(ctx, []string{tg}, func(sks []sketch.Sketch) error { sk = sks[0].Clone(); return nil }); err == nil {
							_, err = db.Merge(ctx, tg, sk)
						}
					case 6:
						hl := names[r.IntN(4)]
						_, err = db.Union(ctx, []string{hl, names[r.IntN(4)]}, fmt.Sprintf("u%d", w))
					case 7:
						kctx, _ := keyed(tg, fmt.Sprintf("k%d-%d", w, i))
						_, err = db.Add(kctx, tg, ids, false)
					case 8:
						sn := []string{"s-hll", "s-cms"}[r.IntN(2)]
						_, err = db.ImportSeries(ctx, sn, r.IntN(2) == 0, func(spec *series.Spec) ([]series.Import, error) {
							sk, err := spec.Params.New()
							if err != nil {
								return nil, err
							}
							b, err := sk.Kind().Prepare(ids)
							if err == nil {
								_, err = sk.Apply(b, nil)
							}
							return []series.Import{{Key: series.Key{Level: series.Hour, Start: hour.Add(-time.Hour)}, Sketch: sk}}, err
						})
						if err == nil && i%2 == 0 {
							late := series.Duration{Hours: 1 + r.IntN(3)}
							_, err = db.ChangeSeries(ctx, sn, series.Change{LateLimit: &late})
						}
					}
					if err != nil {
						t.Errorf("worker %d, write %d: %v", w, i, err)
						return
					}
				}
			})
		}
		wg.Wait()
		for i, db := range dbs {
			infos, _, skipped, err := db.ListSkipping(ctx, "", "", 1000)
			if err != nil || len(skipped) > 0 {
				t.Fatalf("node %d: ListSkipping: %v, skipped %v", i, err, skipped)
			}
			for _, in := range infos {
				if _, _, err := db.UnionPrefix(ctx, in.Name, "", 100); err != nil {
					t.Errorf("node %d: UnionPrefix(%s): %v", i, in.Name, err)
				}
			}
			for _, sn := range []string{"s-hll", "s-cms"} {
				if _, err := db.DescribeSeries(ctx, sn); err != nil {
					t.Errorf("node %d: DescribeSeries(%s): %v", i, sn, err)
				}
				if _, err := viewBucket(db, sn, series.Key{Level: series.Hour, Start: hour}); err != nil {
					t.Errorf("node %d: ViewSeries(%s): %v", i, sn, err)
				}
			}
			if n := db.ChecksumFailures(); n != 0 {
				t.Errorf("node %d counted %d checksum failures: false alarms", i, n)
			}
		}
		for _, c := range []struct{ table, sum, where string }{
			{"sketchd_sketches", sketchChecksumSQL, "true"},
			{"sketchd_series_buckets", bucketChecksumSQL, "true"},
			{"sketchd_series", definitionChecksumSQL, "true"},
			{"sketchd_idempotency", keyChecksumSQL, "answer IS NOT NULL"},
		} {
			var rows, bad int
			err := dbs[0].Pool().QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE checksum IS DISTINCT FROM `+c.sum+`) FROM `+c.table+` WHERE `+c.where).Scan(&rows, &bad)
			if err != nil {
				t.Fatal(err)
			}
			if rows == 0 || bad != 0 {
				t.Errorf("%s: %d of %d rows hold a checksum other than PostgreSQL's", c.table, bad, rows)
			}
		}
	})
}

// docsWritingSQL returns the statements of the first ```sql block of the
// section "## Writing" of docs/postgres.md, comment lines left out.
func docsWritingSQL(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../../docs/postgres.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Writing\n")
	if ok {
		_, section, ok = strings.Cut(section, "```sql\n")
	}
	if ok {
		section, _, ok = strings.Cut(section, "\n```")
	}
	if !ok {
		t.Fatal(`docs/postgres.md has no sql block under "## Writing"`)
	}
	var out, cur []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		cur = append(cur, line)
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			out = append(out, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	return out
}

// TestSQLWritesOfTheDocs: the writes docs/postgres.md shows for SQL (ids
// added to a sketch sketchd made, a sketch created from SQL) keep the
// checksums: sketchd reads both as the sketches of those ids, with no
// false alarm; the add changes no row of a sketch whose value is damaged.
// On plain PostgreSQL: the statements join a local table of events.
func TestSQLWritesOfTheDocs(t *testing.T) {
	var logs logBuffer
	db := nodes(t, pgstoretest.Schema(t, t.TempDir()), 1, &logs)[0]
	if _, err := db.Add(ctx, "campaign:42", storetest.Ints(0, 1000), true); err != nil {
		t.Fatal(err)
	}
	for _, st := range []string{
		`CREATE TABLE new_events (user_id bigint)`,
		`INSERT INTO new_events SELECT generate_series(1000, 1999)`,
		`CREATE TABLE events (user_id bigint)`,
		`INSERT INTO events SELECT generate_series(0, 499)`,
	} {
		if _, err := db.Pool().Exec(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	stmts := docsWritingSQL(t)
	if len(stmts) != 2 {
		t.Fatalf("the docs' writes are %d statements, want the add and the create", len(stmts))
	}
	for _, st := range stmts {
		if tag, err := db.Pool().Exec(ctx, st); err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("%s: %v, %v", st, tag, err)
		}
	}
	for name, ids := range map[string]storetest.Input{"campaign:42": storetest.Ints(0, 2000), "from-sql": storetest.Ints(0, 500)} {
		want := sketchOf(t, hllSpec(14).Params, ids).AppendBinary(nil)
		if got := rawOf(t, db, name); !bytes.Equal(got, want) {
			t.Errorf("%s reads %x, want the sketch of its ids %x", name, clip(got), clip(want))
		}
	}
	if n := db.ChecksumFailures(); n != 0 {
		t.Errorf("%d checksum failures after the docs' writes", n)
	}
	flipSketch(t, db, "campaign:42", 40, 0x08)
	if tag, err := db.Pool().Exec(ctx, stmts[0]); err != nil || tag.RowsAffected() != 0 {
		t.Errorf("the docs' add on a damaged sketch: %v, %v; want no row changed", tag, err)
	}
	_, err := db.Describe(ctx, "campaign:42")
	wantDamaged(t, err, `sketch "campaign:42"`, "Describe after the docs' add on a damaged sketch")
}
