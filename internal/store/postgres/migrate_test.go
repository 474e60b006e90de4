package postgres_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// The statements with which sketchd wrote rows at schema version 4
// (docs/scale-out.md at that version), for the upgrade test.
const (
	v4InsertSketch = `INSERT INTO sketchd_sketches (name, kind, params, metric, hll, data, created_at, updated_at, expire_after, expire_at)
	VALUES ($1, $2, $3, $4, $5::bytea::hll, $6, $7, $8, $9::float8 * interval '1 second', $10)`
	v4InsertSeries = `INSERT INTO sketchd_series (name, kind, params, proto, tz, levels, late_limit, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (name) DO NOTHING`
	v4UpsertHLL = `INSERT INTO sketchd_series_buckets AS b (series, level, start, hll, updated_at)
VALUES ($1, $2, $3, $4::bytea::hll, $5)
ON CONFLICT (series, level, start) DO UPDATE SET hll = hll_union(b.hll, EXCLUDED.hll), updated_at = EXCLUDED.updated_at`
	v4InsertBucket = `INSERT INTO sketchd_series_buckets (series, level, start, data, updated_at)
	VALUES ($1, $2, $3, $4, $5) ON CONFLICT (series, level, start) DO NOTHING`
	v4RecordKey = `WITH k AS (INSERT INTO sketchd_idempotency AS k (target, scope, idempotency_key, fingerprint, answer, created_at)
	VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (target, scope, idempotency_key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, answer = EXCLUDED.answer, created_at = EXCLUDED.created_at
	WHERE k.created_at <= $7
	RETURNING 1)
SELECT 1 / count(*)::int FROM k`
)

// pgConn connects to dsn for the test.
func pgConn(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

// sketchOf is a sketch at params holding ids.
func sketchOf(t *testing.T, params sketch.Params, ids storetest.Input) sketch.Sketch {
	t.Helper()
	sk, err := params.New()
	if err != nil {
		t.Fatal(err)
	}
	b, err := sk.Kind().Prepare(ids)
	if err == nil {
		_, err = sk.Apply(b, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

// TestUpgradeAddsChecksums: a database at schema version 4, holding
// sketches of every kind, series of two kinds with buckets (an HLL bucket
// merged in the database) and an idempotency key, all written with
// version 4's statements, is upgraded by the first start of this
// version (migration 0005, on PostgreSQL and on Citus, where the tables
// are distributed): every value reads as written, with no false alarm,
// the checksums are in force at once (a flipped byte is Damaged), and a
// row inserted without one, as an older sketchd would, is refused.
func TestUpgradeAddsChecksums(t *testing.T) {
	onBackends(t, func(t *testing.T, dsn string) {
		if err := postgres.MigrateTo(ctx, dsn, 4); err != nil {
			t.Fatal(err)
		}
		conn := pgConn(t, dsn)
		now := time.Now().UTC().Truncate(time.Second)
		hour := now.Truncate(time.Hour)
		want := map[string][]byte{}
		for _, k := range sketch.Kinds() {
			name := fmt.Sprintf("v4-%s-%d", k.Type, k.Tag)
			b := sketchOf(t, k.Default(), storetest.Ints(0, 500)).AppendBinary(nil)
			var hllBytes, data []byte
			if k.Type == sketch.TypeHLL {
				hllBytes = b
			} else {
				data = b
			}
			// params is for SQL readers only; sketchd reads the sketch.
			if _, err := conn.Exec(ctx, v4InsertSketch, name, string(k.Type), "{}", false, hllBytes, data, now, now, nil, nil); err != nil {
				t.Fatal(err)
			}
			want[name] = b
		}
		wantBuckets := map[string][]byte{}
		for _, p := range []sketch.Params{hllSpec(11).Params, cmsSpec().Params} {
			spec := seriesFlipSpec(t, p)
			name := "v4-s-" + string(p.Kind().Type)
			levels := `[{"level": "hour", "retention": "P2D"}]`
			proto := sketchOf(t, p, storetest.Input{}).AppendBinary(nil)
			if _, err := conn.Exec(ctx, v4InsertSeries, name, string(p.Kind().Type), "{}", proto, spec.TZ, levels, spec.LateLimit.String(), now); err != nil {
				t.Fatal(err)
			}
			a, b := sketchOf(t, p, storetest.Ints(0, 300)), sketchOf(t, p, storetest.Ints(200, 600))
			if p.Kind().Type == sketch.TypeHLL {
				for _, sk := range []sketch.Sketch{a, b} {
					if _, err := conn.Exec(ctx, v4UpsertHLL, name, "hour", hour, sk.AppendBinary(nil), now); err != nil {
						t.Fatal(err)
					}
				}
			} else if _, err := conn.Exec(ctx, v4InsertBucket, name, "hour", hour, a.AppendBinary(nil), now); err != nil {
				t.Fatal(err)
			}
			merged := a
			if p.Kind().Type == sketch.TypeHLL {
				if err := merged.Merge(b); err != nil {
					t.Fatal(err)
				}
			}
			wantBuckets[name] = merged.AppendBinary(nil)
		}
		id := idem.ID{Target: "v4-cms-2", Scope: "s", Key: "retry-1"}
		fingerprint := bytes.Repeat([]byte{7}, len(idem.Record{}.Fingerprint))
		if _, err := conn.Exec(ctx, v4RecordKey, id.Target, id.Scope, id.Key, fingerprint, []byte("the answer"), now, now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}

		var logs logBuffer
		dbs := nodes(t, dsn, 2, &logs)
		db := dbs[0]
		var version int
		if err := conn.QueryRow(ctx, `SELECT max(version) FROM sketchd_schema_migrations`).Scan(&version); err != nil || version != 5 {
			t.Fatalf("schema version %d, %v; want 5", version, err)
		}
		for name, b := range want {
			if got := rawOf(t, dbs[1], name); !bytes.Equal(got, b) {
				t.Errorf("%s reads %x after the upgrade, want %x", name, clip(got), clip(b))
			}
			if _, err := db.Describe(ctx, name); err != nil {
				t.Error(err)
			}
		}
		for name, b := range wantBuckets {
			got, err := viewBucket(db, name, series.Key{Level: series.Hour, Start: hour})
			if err != nil || got == nil || !bytes.Equal(got.AppendBinary(nil), b) {
				t.Errorf("%s: the bucket reads %v, %v after the upgrade; want it as written", name, got, err)
			}
			if _, err := db.DescribeSeries(ctx, name); err != nil {
				t.Error(err)
			}
			if _, err := dbs[1].AddSeries(ctx, name, hour, storetest.Ints(0, 10)); err != nil {
				t.Error(err)
			}
		}
		rec, ok, err := db.Remembered(ctx, id)
		if err != nil || !ok || string(rec.Answer) != "the answer" {
			t.Errorf("Remembered after the upgrade = %q, %v, %v", rec.Answer, ok, err)
		}
		if _, _, err := db.UnionPrefix(ctx, "v4-hll", "", 10); err != nil {
			t.Error(err)
		}
		if _, err := db.Add(ctx, "v4-hll-1", storetest.Ints(1000, 1100), false); err != nil {
			t.Error(err)
		}
		for i, node := range dbs {
			if n := node.ChecksumFailures(); n != 0 {
				t.Errorf("node %d counted %d checksum failures after the upgrade: false alarms\n%s", i, n, logs.String())
			}
		}
		// In force at once.
		flipSketch(t, db, "v4-theta-3", 9, 0x40)
		_, err = db.Describe(ctx, "v4-theta-3")
		wantDamaged(t, err, `sketch "v4-theta-3"`, "Describe of a value damaged after the upgrade")
		// An older sketchd's insert, without a checksum, is refused.
		if _, err := conn.Exec(ctx, v4InsertSketch, "old-node", "cms", "{}", false, nil, want["v4-cms-2"], now, now, nil, nil); err == nil {
			t.Error("a row without a checksum was inserted")
		}
	})
}
