package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/sketchd/sketchd/internal/bloom"
	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/sketch"
)

func bloomSpec(tb testing.TB, n int64, p float64) sketch.Spec {
	tb.Helper()
	bp, err := bloom.ParamsFor(n, p)
	if err != nil {
		tb.Fatal(err)
	}
	return sketch.Spec{Params: sketch.BloomParams{Params: bp}}
}

// fresh adds ids to name asking which were new.
func fresh(tb testing.TB, s Store, name string, create bool, ids ...int64) []bool {
	tb.Helper()
	in := Input{Fresh: true}
	for _, v := range ids {
		in.IDs = append(in.IDs, cms.IntID(v))
	}
	a, err := s.Add(ctx, name, in, create)
	if err != nil {
		tb.Fatalf("Add(%q, report new): %v", name, err)
	}
	if a.Type != sketch.TypeBloom || a.Accepted != len(ids) || len(a.Fresh) != len(ids) {
		tb.Fatalf("Add(%q, report new) = %+v for %d ids", name, a, len(ids))
	}
	return a.Fresh
}

// testBloomFresh: a check-and-add reports the ids absent before it, in
// order (an id twice in one add is new once), across a reopen; asking
// which ids were new of another kind is a Conflict that changes nothing;
// a missing filter is created by an add that asks.
func testBloomFresh(t *testing.T, in *Instance) {
	create(t, in, "b", bloomSpec(t, 10_000, 0.001))
	if got, want := fresh(t, in, "b", false, 1, 2, 3), []bool{true, true, true}; !slices.Equal(got, want) {
		t.Errorf("first add: new %v, want %v", got, want)
	}
	if got, want := fresh(t, in, "b", false, 2, 3, 4, 4, 5), []bool{false, false, true, false, true}; !slices.Equal(got, want) {
		t.Errorf("second add: new %v, want %v", got, want)
	}
	in.Settle(t)
	in.Reopen(t)
	if got, want := fresh(t, in, "b", false, 5, 6, 1), []bool{false, true, false}; !slices.Equal(got, want) {
		t.Errorf("after reopen: new %v, want %v", got, want)
	}
	// A plain add to a filter records the same, and a later
	// check-and-add sees it.
	if a := add(t, in, "b", Ints(100, 103)); !slices.Equal(a.Fresh, []bool{true, true, true}) {
		t.Errorf("a plain add answers %+v", a)
	}
	if got, want := fresh(t, in, "b", false, 101, 200), []bool{false, true}; !slices.Equal(got, want) {
		t.Errorf("after a plain add: new %v, want %v", got, want)
	}
	info, err := in.Describe(ctx, "b")
	must(t, err, "describe")
	if info.Cardinality < 9.5 || info.Cardinality > 10.5 || info.BitsSet == 0 || info.FalsePositiveRate <= 0 || info.FalsePositiveRate > 1e-6 {
		t.Errorf("describe: %g items, %d bits set, rate %g; want about 10 items", info.Cardinality, info.BitsSet, info.FalsePositiveRate)
	}

	create(t, in, "h", hllSpec(10))
	before := raw(t, in, "h")
	_, err = in.Add(ctx, "h", Input{IDs: []cms.ID{cms.IntID(1)}, Fresh: true}, false)
	mustKind(t, err, sketch.Conflict, "report new of an hll")
	if got := raw(t, in, "h"); string(got) != string(before) {
		t.Error("a refused report-new add changed the hll")
	}
	if got, want := fresh(t, in, "new-b", true, 7, 7), []bool{true, false}; !slices.Equal(got, want) {
		t.Errorf("add creating: new %v, want %v", got, want)
	}
	info, err = in.Describe(ctx, "new-b")
	must(t, err, "describe new-b")
	if info.Spec.Params != (sketch.BloomParams{Params: bloom.DefaultParams()}) {
		t.Errorf("created %v, want the default filter", info.Spec.Params)
	}
}

// testBloomFreshConcurrent: writers check-and-add overlapping ids at once;
// each id is reported new exactly once over all of them (the filter is
// far below its capacity, so a false positive has probability ~1e-20).
func testBloomFreshConcurrent(t *testing.T, in *Instance) {
	create(t, in, "b", bloomSpec(t, 100_000, 0.01))
	const writers, rounds, per = 6, 15, 40
	var mu sync.Mutex
	newCount := map[int64]int{}
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for w := range writers {
		wg.Go(func() {
			for r := range rounds {
				// Writer w overlaps its neighbour: ids repeat across
				// writers and rounds.
				lo := int64(((w+r)%writers)*per/2 + r*7)
				in2 := Input{Fresh: true}
				for v := lo; v < lo+per; v++ {
					in2.IDs = append(in2.IDs, cms.IntID(v))
				}
				a, err := in.Add(ctx, "b", in2, false)
				if err != nil {
					errs <- err
					return
				}
				if len(a.Fresh) != per {
					errs <- fmt.Errorf("%d answers for %d ids", len(a.Fresh), per)
					return
				}
				mu.Lock()
				for i, f := range a.Fresh {
					if f {
						newCount[lo+int64(i)]++
					} else if _, ok := newCount[lo+int64(i)]; !ok {
						newCount[lo+int64(i)] = 0
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for id, n := range newCount {
		if n != 1 {
			t.Errorf("id %d reported new %d times", id, n)
		}
	}
}
