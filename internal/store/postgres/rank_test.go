package postgres_test

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/postgres"
)

// requireJoint skips a test of ranking on the database when db has no
// sketchd_hll extension, or fails it under SKETCHD_REQUIRE_PGEXT=1.
func requireJoint(t *testing.T, db *postgres.DB) {
	t.Helper()
	if db.RanksOnDatabase() {
		return
	}
	msg := "the database has no sketchd_hll extension: make -C pg/sketchd_hll install (docs/postgres.md, \"Ranking on the database\")"
	if os.Getenv("SKETCHD_REQUIRE_PGEXT") == "1" {
		t.Fatal("SKETCHD_REQUIRE_PGEXT=1 but " + msg)
	}
	t.Skip(msg)
}

// hllBytes builds an HLL at p from n random hashes and returns it with
// its encoding.
func hllBytes(t *testing.T, rng *rand.Rand, p hll.Params, hashes []uint64, n int) (*hll.Sketch, []byte) {
	t.Helper()
	s, err := hll.New(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hashes {
		s.AddHash(h)
	}
	for range n {
		s.AddHash(rng.Uint64())
	}
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	d, err := hll.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return d, b
}

// TestJointFunctionMatchesGo holds the extension's sketchd_hll_joint to
// sketch.EncodeJoint, byte for byte, on pairs of every register width
// (seven bits have no table), precisions from 4 to 12, explicit
// and sparse settings, every representation, pairs at other parameters,
// and FULL bodies of random bits; and to NULL on bytes of the wrong
// length or whose checksum does not hold.
func TestJointFunctionMatchesGo(t *testing.T) {
	db := open(t, 1)[0]
	requireJoint(t, db)
	pool := db.Pool()
	q := "SELECT " + db.JointFunc() + "($1::bytea::hll, $2::bytea::hll, $3, $4)"
	key := md5.Sum([]byte("sketch c:1 hll"))
	// joint asks the function for the table of ab and bb, bb's row
	// checksum being MD5(key || bb).
	joint := func(ab, bb []byte) ([]byte, error) {
		sum := md5.Sum(append(key[:], bb...))
		var got []byte
		err := pool.QueryRow(ctx, q, ab, bb, key[:], sum[:]).Scan(&got)
		return got, err
	}
	check := func(what string, a, b *hll.Sketch, ab, bb []byte) {
		t.Helper()
		got, err := joint(ab, bb)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		want, ok := sketch.EncodeJoint(a, b)
		if !ok {
			want = nil
		}
		if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("%s: sketchd_hll_joint gave %x, sketch.EncodeJoint %x (table: %v)", what, got, want, ok)
		}
	}
	rng := rand.New(rand.NewPCG(41, 3))
	tables := 0
	for _, log2m := range []int{4, 9, 12} {
		for rw := 1; rw <= 7; rw++ {
			for _, set := range []struct {
				exp    int64
				sparse bool
			}{{-1, true}, {0, false}, {0, true}} {
				p := hll.Params{Log2m: log2m, Regwidth: rw, Expthresh: set.exp, Sparse: set.sparse}
				m := 1 << log2m
				for _, n := range []int{0, 3, m / 8, m / 2, 4 * m} {
					common := make([]uint64, n/3)
					for i := range common {
						common[i] = rng.Uint64()
					}
					a, ab := hllBytes(t, rng, p, common, 3*m)
					b, bb := hllBytes(t, rng, p, common, n-len(common))
					what := fmt.Sprintf("%+v, %d ids", p, n)
					check(what, a, b, ab, bb)
					check(what+" swapped", b, a, bb, ab)
					if _, ok := sketch.EncodeJoint(a, b); ok {
						tables++
					}
					// Random register bits in a FULL body.
					if a.Representation() == hll.Full {
						rb := bytes.Clone(ab)
						for i := 3; i < len(rb); i++ {
							rb[i] = byte(rng.Uint32())
						}
						r, err := hll.Decode(rb)
						if err != nil {
							t.Fatal(err)
						}
						check(what+" random bits", a, r, ab, rb)
						if got, err := joint(ab, ab[:len(ab)-1]); err != nil || got != nil {
							t.Fatalf("%s: a FULL body a byte short gave %x, %v; want NULL", what, got, err)
						}
						// A checksum that does not hold: NULL, whatever the bytes.
						var got []byte
						bad := md5.Sum(rb)
						if err := pool.QueryRow(ctx, q, ab, rb, key[:], bad[:]).Scan(&got); err != nil || got != nil {
							t.Fatalf("%s: a candidate whose checksum does not hold gave %x, %v; want NULL", what, got, err)
						}
					}
				}
			}
		}
	}
	// Other parameters: the same registers, another cutoff byte.
	p := hll.Params{Log2m: 10, Regwidth: 5, Expthresh: -1, Sparse: true}
	a, ab := hllBytes(t, rng, p, nil, 5000)
	p.Expthresh = 0
	b, bb := hllBytes(t, rng, p, nil, 5000)
	check("another expthresh", a, b, ab, bb)
	if tables < 60 {
		t.Fatalf("only %d pairs had a table: the cases no longer cover the function", tables)
	}
}

// rankFixture stores, under "c:", FULL HLLs at the target's precision and
// others the database's tables do not answer (small, another precision,
// a Count-Min), and returns the target.
func rankFixture(t *testing.T, db *postgres.DB) *hll.Sketch {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	tp := hll.DefaultParams()
	target, _ := hllBytes(t, rng, tp, nil, 40_000)
	for i := range 30 {
		p := tp
		n := 2_000 + 3_000*i
		if i%10 == 9 {
			p.Log2m = 12
		}
		s, _ := hllBytes(t, rng, p, nil, n)
		if _, _, err := db.Put(ctx, "c:"+strconv.Itoa(i), sketch.NewHLL(s)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := db.Create(ctx, "c:cms", sketch.Spec{Params: sketch.CMSParams{Params: cms.Params{Width: 64, Depth: 3}}}); err != nil {
		t.Fatal(err)
	}
	return target
}

// TestEachPrefixJoint checks what a rank on the database gives for each
// candidate: the table of every FULL HLL at the target's parameters,
// with which sketch.PairJoint answers exactly what Intersect answers
// the candidate itself; every other candidate whole; every candidate
// once.
func TestEachPrefixJoint(t *testing.T) {
	statements := &statementLog{}
	db := openWith(t, 1, postgres.Options{MaxConns: 3, Tracer: statements})[0]
	requireJoint(t, db)
	defer statements.checkDocumented(t)
	target := rankFixture(t, db)
	seen := map[string]bool{}
	tables := 0
	n, ok, err := db.EachPrefixJoint(ctx, "c:", "", 1000, target, func(name string, j *sketch.Joint, sk sketch.Sketch) error {
		if seen[name] {
			t.Errorf("%s given twice", name)
		}
		seen[name] = true
		var own sketch.Sketch
		if err := db.View(ctx, []string{name}, func(sks []sketch.Sketch) error { own = sks[0].Clone(); return nil }); err != nil {
			return err
		}
		h, isHLL := sketch.HLLOf(own)
		_, eligible := sketch.EncodeJoint(target, h)
		if (j != nil) != (isHLL && eligible) || (j == nil) == (sk == nil) {
			t.Errorf("%s: table %v, sketch %v; want a table exactly for a FULL HLL at the target's parameters (%v)", name, j != nil, sk != nil, eligible)
		}
		if j == nil {
			return nil
		}
		tables++
		names := []string{"t", name}
		pair, err := sketch.PairJoint(names, target, j, "")
		if err != nil {
			return err
		}
		got := pair.Intersect()
		want, err := sketch.Intersect(names, []*hll.Sketch{target, h}, "")
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: from the database's table %+v, from the sketch %+v", name, got, want)
		}
		return nil
	})
	if err != nil || !ok {
		t.Fatalf("EachPrefixJoint = %d, %v, %v", n, ok, err)
	}
	if n != 31 || len(seen) != 31 || tables < 20 {
		t.Errorf("%d candidates (%d seen), %d tables; want 31, with a table for each of the 20 or more FULL ones", n, len(seen), tables)
	}
	// Past the limit, nothing is read.
	if _, _, err := db.EachPrefixJoint(ctx, "c:", "", 30, target, func(string, *sketch.Joint, sketch.Sketch) error {
		t.Error("a candidate was given past the limit")
		return nil
	}); sketch.KindOf(err) != sketch.TooLarge {
		t.Errorf("31 candidates with a limit of 30: %v, want TooLarge", err)
	}
}

// TestEachPrefixJointWithoutFunction: a database that lacks the
// function (a Citus worker added without the extension) makes the rank
// read its candidates on the node: EachPrefixJoint reads nothing and says
// so, with no error.
func TestEachPrefixJointWithoutFunction(t *testing.T) {
	db := open(t, 1)[0]
	requireJoint(t, db)
	target := rankFixture(t, db)
	db.SetJointFunc(`"public"."sketchd_hll_no_such_function"`)
	n, ok, err := db.EachPrefixJoint(ctx, "c:", "", 1000, target, func(string, *sketch.Joint, sketch.Sketch) error {
		t.Error("a candidate was given by a statement that failed")
		return nil
	})
	if n != 0 || ok || err != nil {
		t.Fatalf("EachPrefixJoint without the function = %d, %v, %v; want 0, false, nil", n, ok, err)
	}
}

// TestEachPrefixJointDamage: a candidate whose stored bytes no longer
// match their checksum is not turned into a table on the database; its
// bytes come whole and the rank fails naming it, as every read does.
func TestEachPrefixJointDamage(t *testing.T) {
	db := open(t, 1)[0]
	requireJoint(t, db)
	target := rankFixture(t, db)
	// Flip the last register byte of c:4, a FULL candidate.
	if _, err := db.Pool().Exec(ctx, `UPDATE sketchd_sketches SET hll = overlay(hll_send(hll) placing '\x55'::bytea from length(hll_send(hll)))::hll WHERE name = 'c:4'`); err != nil {
		t.Fatal(err)
	}
	_, _, err := db.EachPrefixJoint(ctx, "c:", "", 1000, target, func(string, *sketch.Joint, sketch.Sketch) error { return nil })
	if sketch.KindOf(err) != sketch.Damaged || !strings.Contains(err.Error(), `"c:4"`) {
		t.Fatalf("a damaged candidate: %v, want a Damaged error naming c:4", err)
	}
	var se *sketch.Error
	if !errors.As(err, &se) {
		t.Fatalf("%T is not a *sketch.Error", err)
	}
}

// TestCitusRankRunsOnWorkers explains a rank's statement on Citus: one
// task per shard, each computing sketchd_hll_joint on its worker, so only
// the tables travel to the coordinator.
func TestCitusRankRunsOnWorkers(t *testing.T) {
	statements := &statementLog{}
	db, dsn := openCitus(t, postgres.Options{Tracer: statements})
	defer statements.checkDocumented(t)
	requireJoint(t, db)
	rankFixture(t, db)
	target, tb := hllBytes(t, rand.New(rand.NewPCG(1, 1)), hll.DefaultParams(), nil, 40_000)
	lines, shards := explainCitus(t, dsn, postgres.JointSQL(db.JointFunc()), "c:", "", "c:\x7f", time.Now(), tb)
	plan := strings.Join(lines, "\n")
	tasks, queries := 0, 0
	for _, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "Task Count: "):
			tasks, _ = strconv.Atoi(strings.TrimPrefix(l, "Task Count: "))
		case strings.HasPrefix(l, "Query: ") && strings.Contains(l, "sketchd_hll_joint("):
			queries++
		}
	}
	if !strings.Contains(plan, "Custom Scan (Citus Adaptive)") || tasks != shards {
		t.Fatalf("the plan has %d tasks for %d shards; want one per shard through Citus's executor:\n%s", tasks, shards, plan)
	}
	if queries == 0 {
		t.Errorf("no worker's query computes sketchd_hll_joint:\n%s", plan)
	}
	// And the store's walk gives the tables.
	tables := 0
	if _, _, err := db.EachPrefixJoint(ctx, "c:", "", 1000, target, func(_ string, j *sketch.Joint, _ sketch.Sketch) error {
		if j != nil {
			tables++
		}
		return nil
	}); err != nil || tables < 20 {
		t.Errorf("EachPrefixJoint on Citus gave %d tables (%v), want one for each of the 20 or more FULL candidates", tables, err)
	}
}
