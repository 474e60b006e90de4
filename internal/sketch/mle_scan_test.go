package sketch

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
)

// TestPairScanMatchesGeneralPath checks that an MLE intersection of two
// FULL sketches read in one pass (pairScan) answers exactly what the
// general path answers, which builds the union with hll.Union and counts
// the register pairs apart: every field, terms, bounds and verdict, at
// several precisions and register widths, with overlaps from none to
// containment and sizes far apart. Folded pairs, SPARSE and EXPLICIT
// sketches and regwidth 7 take the general path and are checked to.
func TestPairScanMatchesGeneralPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 17))
	build := func(p hll.Params, hashes ...[]uint64) *hll.Sketch {
		s, err := hll.New(p)
		if err != nil {
			t.Fatal(err)
		}
		return fill(s, hashes...)
	}
	cases, scanned := 0, 0
	sizes := []int{10, 14, 16}
	if raceEnabled {
		// One goroutine, sketches of up to 13 million hashes: the race
		// detector slows the building about tenfold and has nothing to
		// find. scripts/test runs the package in a normal build, log2m 16 too.
		sizes = sizes[:2]
	}
	for _, log2m := range sizes {
		for _, rw := range []int{4, 5, 6, 7} {
			p := hll.Params{Log2m: log2m, Regwidth: rw, Expthresh: -1, Sparse: true}
			m := 1 << log2m
			for _, shape := range [][3]int{
				{20 * m, 20 * m, 10 * m}, // large overlap
				{30 * m, 3 * m, 0},       // disjoint, far apart
				{8 * m, 2 * m, 2 * m},    // the smaller inside the larger
				{3 * m, 3 * m, m / 10},   // a small overlap near the bias band
				{200 * m, 4 * m, m},      // sizes 50 times apart
			} {
				common := randomHashes(rng, shape[2])
				a := build(p, common, randomHashes(rng, shape[0]-shape[2]))
				b := build(p, common, randomHashes(rng, shape[1]-shape[2]))
				names := []string{"a", "b"}
				pairs := [][2]*hll.Sketch{{a, b}, {b, a}}
				if log2m > 10 {
					// A folded pair: the scan sees the folded sketch.
					f := build(hll.Params{Log2m: log2m - 1, Regwidth: rw, Expthresh: -1, Sparse: true}, common, randomHashes(rng, shape[1]))
					pairs = append(pairs, [2]*hll.Sketch{a, f})
				}
				for i, pr := range pairs {
					cases++
					full := pr[0].Representation() == hll.Full && pr[1].Representation() == hll.Full
					if s := newPairScan(operand{sk: pr[0]}, operand{sk: pr[1]}); (s != nil) != (full && i < 2 && rw <= 6) {
						t.Errorf("log2m %d regwidth %d shape %v pair %d (%s, %s): scanned %t", log2m, rw, shape, i, pr[0].Representation(), pr[1].Representation(), s != nil)
					} else if s != nil {
						scanned++
						s.release()
					}
					pairScanOn = false
					want, errWant := Intersect(names, pr[:], MethodMLE)
					pairScanOn = true
					got, errGot := Intersect(names, pr[:], MethodMLE)
					if fmt.Sprint(errWant) != fmt.Sprint(errGot) {
						t.Fatalf("log2m %d regwidth %d shape %v: errors %v and %v", log2m, rw, shape, errWant, errGot)
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("log2m %d regwidth %d shape %v (%s and %s):\nscan    %+v\ngeneral %+v", log2m, rw, shape,
							pr[0].Representation(), pr[1].Representation(), got, want)
					}
				}
			}
		}
	}
	t.Logf("%d pairs, %d scanned", cases, scanned)
	if scanned < cases/2 {
		t.Errorf("only %d of %d pairs took the scan", scanned, cases)
	}
}
