package sketch

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
)

// intersectJoint is PairJoint, then Intersect: the tests' one call.
func intersectJoint(names []string, target *hll.Sketch, j *Joint, method Method) (Intersection, error) {
	p, err := PairJoint(names, target, j, method)
	if err != nil {
		return Intersection{}, err
	}
	return p.Intersect(), nil
}

// decoded returns s as a store gives it back: decoded from its encoding.
func decoded(t testing.TB, s *hll.Sketch) *hll.Sketch {
	t.Helper()
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	d, err := hll.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestIntersectJointMatchesIntersect checks that a candidate known only
// by its joint table with the target gets, field for field, the answer
// Intersect gives the target and the candidate itself (decoded from its
// bytes, as a database store reads it): at every register width the
// table takes, several precisions, explicit and sparse settings, and
// overlaps from none to containment. A pair Intersect does not answer in
// one pass has no table.
func TestIntersectJointMatchesIntersect(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 5))
	names := []string{"target", "candidate"}
	tables, none := 0, 0
	for _, log2m := range []int{4, 10, 12} {
		for _, rw := range []int{1, 3, 5, 6, 7} {
			for _, set := range []struct {
				exp    int64
				sparse bool
			}{{-1, true}, {0, false}, {256, true}} {
				p := hll.Params{Log2m: log2m, Regwidth: rw, Expthresh: set.exp, Sparse: set.sparse}
				m := 1 << log2m
				for _, shape := range [][3]int{
					{20 * m, 20 * m, 10 * m},
					{30 * m, 3 * m, 0},
					{8 * m, 2 * m, 2 * m},
					{3 * m, 3 * m, m / 10},
					{50 * m, m / 8, m / 16}, // a candidate few registers fill
					{m / 2, m / 3, m / 5},
				} {
					common := randomHashes(rng, shape[2])
					a, err := hll.New(p)
					if err != nil {
						t.Fatal(err)
					}
					b := a.Clone()
					target := fill(a, common, randomHashes(rng, shape[0]-shape[2]))
					cand := decoded(t, fill(b, common, randomHashes(rng, shape[1]-shape[2])))
					want, err := Intersect(names, []*hll.Sketch{target, cand}, MethodMLE)
					if err != nil {
						t.Fatal(err)
					}
					enc, ok := EncodeJoint(target, cand)
					eligible := target.Representation() == hll.Full && cand.Representation() == hll.Full && rw <= 6
					if ok != eligible {
						t.Fatalf("%+v %v: EncodeJoint gave a table %v, want %v", p, shape, ok, eligible)
					}
					if !ok {
						none++
						continue
					}
					tables++
					j, err := DecodeJoint(enc, target.Params())
					if err != nil {
						t.Fatalf("%+v %v: DecodeJoint: %v", p, shape, err)
					}
					got, err := intersectJoint(names, target, j, "")
					if err != nil {
						t.Fatalf("%+v %v: PairJoint, Intersect: %v", p, shape, err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%+v %v: from the joint table\n%+v\nwant Intersect's\n%+v", p, shape, got, want)
					}
					var in Info
					hllSketch{h: cand}.Describe(&in)
					if a := j.CandidateAnswer(hll.PostgreSQLEstimator); a.Estimate != in.Cardinality || a.StdError != in.StdError {
						t.Fatalf("%+v %v: the candidate's answer from the table is %+v, Describe gives %+v", p, shape, a, in)
					}
				}
			}
		}
	}
	if tables < 100 || none < 20 {
		t.Fatalf("%d pairs had a table and %d none: the cases no longer cover both", tables, none)
	}
}

// TestIntersectJointRefuses checks what a joint table does not answer:
// the inclusion–exclusion method, a target that is not FULL, a table at
// other parameters, and a candidate the table shows few enough registers
// of to be SPARSE.
func TestIntersectJointRefuses(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	p := hll.Params{Log2m: 10, Regwidth: 5, Expthresh: -1, Sparse: true}
	a, _ := hll.New(p)
	b := a.Clone()
	small := a.Clone()
	target := fill(a, randomHashes(rng, 20_000))
	cand := fill(b, randomHashes(rng, 20_000))
	fill(small, randomHashes(rng, 50))
	enc, ok := EncodeJoint(target, cand)
	if !ok {
		t.Fatal("no table for two FULL sketches")
	}
	j, err := DecodeJoint(enc, p)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"t", "c"}
	if _, err := intersectJoint(names, target, j, MethodInclusionExclusion); !errors.Is(err, ErrJointIneligible) {
		t.Errorf("inclusion–exclusion from a table: %v, want ErrJointIneligible", err)
	}
	if _, err := intersectJoint(names, small, j, ""); !errors.Is(err, ErrJointIneligible) {
		t.Errorf("a SPARSE target: %v, want ErrJointIneligible", err)
	}
	other, err := DecodeJoint(enc, hll.Params{Log2m: 10, Regwidth: 5, Expthresh: 0, Sparse: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := intersectJoint(names, target, other, ""); !errors.Is(err, ErrJointIneligible) {
		t.Errorf("a table at other parameters: %v, want ErrJointIneligible", err)
	}
	// The table of target against a candidate with 50 registers filled,
	// written as if it were FULL: sketchd would keep it SPARSE.
	ra, rb := target.Registers(nil), small.Registers(nil)
	if _, err := intersectJoint(names, target, mustDecodeJoint(t, tableOf(ra, rb), p), ""); !errors.Is(err, ErrJointIneligible) {
		t.Errorf("a candidate SPARSE by its table: %v, want ErrJointIneligible", err)
	}
	// With sparse off (and explicit, which would hold 50 hashes exactly)
	// the same registers are FULL, and answered.
	q := p
	q.Sparse, q.Expthresh = false, 0
	tq, _ := hll.New(q)
	for _, h := range randomHashes(rng, 20_000) {
		tq.AddHash(h)
	}
	sq, _ := hll.New(q)
	fill(sq, randomHashes(rng, 50))
	sq = decoded(t, sq)
	want, err := Intersect(names, []*hll.Sketch{tq, sq}, MethodMLE)
	if err != nil {
		t.Fatal(err)
	}
	got, err := intersectJoint(names, tq, mustDecodeJoint(t, tableOf(tq.Registers(nil), sq.Registers(nil)), q), "")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("a small FULL candidate with sparse off: %+v, %v; want %+v", got, err, want)
	}
}

// tableOf writes the joint table of two register arrays.
func tableOf(ra, rb []uint8) []byte {
	var joint [64 * 64]int
	vmax := 0
	for i := range ra {
		joint[int(ra[i])<<6|int(rb[i])]++
		vmax = max(vmax, int(ra[i]), int(rb[i]))
	}
	out := []byte{jointVersion, byte(vmax)}
	for c, n := range joint {
		if n > 0 {
			out = append(out, byte(c>>8), byte(c))
			for ; n >= 0x80; n >>= 7 {
				out = append(out, byte(n)|0x80)
			}
			out = append(out, byte(n))
		}
	}
	return out
}

func mustDecodeJoint(t *testing.T, b []byte, p hll.Params) *Joint {
	t.Helper()
	j, err := DecodeJoint(b, p)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestDecodeJointRefuses checks that a damaged table is refused with a
// message naming what is wrong, never read as another table.
func TestDecodeJointRefuses(t *testing.T) {
	p := hll.Params{Log2m: 4, Regwidth: 5, Expthresh: -1, Sparse: false}
	ra := []uint8{0, 1, 2, 3, 1, 1, 0, 0, 4, 2, 1, 0, 0, 0, 7, 1}
	rb := []uint8{1, 1, 0, 3, 2, 1, 0, 0, 0, 2, 1, 5, 0, 0, 7, 1}
	good := tableOf(ra, rb)
	if _, err := DecodeJoint(good, p); err != nil {
		t.Fatalf("the good table: %v", err)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "shorter than its 2-byte header"},
		{"version", append([]byte{2}, good[1:]...), "version 2"},
		{"vmax above the pairs", append([]byte{1, 8}, good[2:]...), "held by no register"},
		{"vmax above the registers", append([]byte{1, 40}, good[2:]...), "exceeds what 5-bit registers hold"},
		{"cut inside a pair", good[:len(good)-2], "cut at byte"},
		{"counts short", tableOf(ra[1:], rb[1:]), "counts 15 positions of 16"},
		{"a zero count", []byte{1, 1, 0x00, 0x00, 0x00, 0x00, 0x41, 16}, "not a count"},
		{"out of order", append(append([]byte{}, good...), 0x00, 0x00, 0x01), "out of order"},
		{"more than m", append(append([]byte{}, good[:4]...), 0x11), "not a count of 1 to 16"},
	} {
		_, err := DecodeJoint(c.b, p)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%s: DecodeJoint(%x) = %v, want an error saying %q", c.name, c.b, err, c.want)
		}
	}
	if _, err := DecodeJoint(good, hll.Params{Log2m: 4, Regwidth: 7}); !errors.Is(err, ErrJointIneligible) {
		t.Errorf("7-bit registers: %v, want ErrJointIneligible", err)
	}
}

// FuzzDecodeJoint holds DecodeJoint to its checks on any bytes: a table
// it accepts counts exactly the registers, and answers an intersection
// with a FULL target without panicking.
func FuzzDecodeJoint(f *testing.F) {
	p := hll.Params{Log2m: 4, Regwidth: 5, Expthresh: -1, Sparse: false}
	f.Add(tableOf([]uint8{0, 1, 2, 3, 1, 1, 0, 0, 4, 2, 1, 0, 0, 0, 7, 1}, []uint8{1, 1, 0, 3, 2, 1, 0, 0, 0, 2, 1, 5, 0, 0, 7, 1}))
	f.Add([]byte{1, 0, 0, 0, 16})
	f.Add([]byte{1, 31, 0x07, 0xdf, 16})
	target, _ := hll.New(p)
	for _, h := range randomHashes(rand.New(rand.NewPCG(1, 2)), 200) {
		target.AddHash(h)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := DecodeJoint(b, p)
		if err != nil {
			return
		}
		h := j.candidateHistogram()
		n := 0
		for _, c := range h {
			n += c
		}
		if n != p.NumRegisters() {
			t.Fatalf("an accepted table counts %d registers of %d", n, p.NumRegisters())
		}
		if _, err := intersectJoint([]string{"t", "c"}, target, j, ""); err != nil && !errors.Is(err, ErrJointIneligible) {
			t.Fatalf("PairJoint, Intersect: %v", err)
		}
	})
}
