package cms

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// zipfStream returns n ids drawn from a Zipf distribution over ranks
// 0..imax (rank 0 heaviest): every third rank is a text id, the others
// int ids scattered over int64.
func zipfStream(seed uint64, n int, imax uint64) []ID {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	z := rand.NewZipf(r, 1.1, 1, imax)
	ids := make([]ID, n)
	for i := range ids {
		k := z.Uint64()
		if k%3 == 1 {
			ids[i] = TextID(fmt.Sprintf("user-%d", k))
		} else {
			ids[i] = IntID(int64(k*0x9e3779b97f4a7c15) >> 1)
		}
	}
	return ids
}

func feed(tb testing.TB, s *Sketch, ids []ID) {
	tb.Helper()
	for _, id := range ids {
		var err error
		if id.IsText() {
			err = s.AddText([]byte(id.Text()), 1)
		} else {
			err = s.AddInt(id.Int(), 1)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}

func count(ids []ID) exactCounts {
	c := exactCounts{}
	for _, id := range ids {
		c[id]++
	}
	return c
}

// trueTop returns the k ids with the largest counts (ties by id).
func trueTop(c exactCounts, k int) []ID {
	cs := make([]candidate, 0, len(c))
	for id, n := range c {
		cs = append(cs, candidate{id: id, est: n})
	}
	slices.SortFunc(cs, compareRank)
	out := make([]ID, k)
	for i := range out {
		out[i] = cs[i].id
	}
	return out
}

// checkAccuracy checks that s never undercounts any id of the stream nor a
// few thousand absent ids, and that at least 1-δ of them are within ε·N.
func checkAccuracy(t *testing.T, s *Sketch, truth exactCounts) {
	t.Helper()
	bound := s.ErrorBound()
	queried, within := 0, 0
	check := func(id ID, n uint64) {
		est := s.Estimate(id)
		if est < n {
			t.Fatalf("Estimate(%v) = %d below true count %d", id, est, n)
		}
		queried++
		if float64(est-n) <= bound {
			within++
		}
	}
	for id, n := range truth {
		check(id, n)
	}
	for i := range 5000 {
		id := IntID(int64(i) + 1<<40)
		if i%2 == 1 {
			id = TextID(fmt.Sprintf("absent-%d", i))
		}
		check(id, truth[id])
	}
	if frac := float64(within) / float64(queried); frac < s.Confidence() {
		t.Errorf("%d of %d estimates (%.4f) within ε·N = %.0f, want at least %.4f", within, queried, frac, bound, s.Confidence())
	}
}

func checkTop(t *testing.T, s *Sketch, want []ID) {
	t.Helper()
	top := s.Top(len(want))
	got := make([]ID, len(top))
	for i, it := range top {
		got[i] = it.ID
		if it.Count != s.Estimate(it.ID) {
			t.Errorf("Top count of %v = %d, want its estimate %d", it.ID, it.Count, s.Estimate(it.ID))
		}
	}
	for _, id := range want {
		if !slices.Contains(got, id) {
			t.Errorf("Top(%d) = %v misses %v of the true top %v", len(want), got, id, want)
		}
	}
}

func TestZipfStream(t *testing.T) {
	const n = 300_000
	ids := zipfStream(1, n, 100_000)
	truth := count(ids)
	top10 := trueTop(truth, 10)
	p := Params{Width: 2719, Depth: 5, TopK: 10} // ε = 0.001, δ = 0.01

	whole := mustNew(t, p)
	feed(t, whole, ids)
	halves := [2]*Sketch{mustNew(t, p), mustNew(t, p)}
	feed(t, halves[0], ids[:n/2])
	feed(t, halves[1], ids[n/2:])
	union := halves[0].Clone()
	if err := union.Union(halves[1]); err != nil {
		t.Fatal(err)
	}

	cp := p
	cp.Conservative = true
	cons := mustNew(t, cp)
	feed(t, cons, ids)
	chalves := [2]*Sketch{mustNew(t, cp), mustNew(t, cp)}
	feed(t, chalves[0], ids[:n/2])
	feed(t, chalves[1], ids[n/2:])
	cunion := chalves[0].Clone()
	if err := cunion.Union(chalves[1]); err != nil {
		t.Fatal(err)
	}

	t.Run("plain", func(t *testing.T) {
		checkAccuracy(t, whole, truth)
		checkTop(t, whole, top10)
	})
	t.Run("plain union equals whole", func(t *testing.T) {
		if union.Total() != n || !slices.Equal(union.counters, whole.counters) {
			t.Fatalf("union of halves: Total() = %d, counters equal %v; want %d, true",
				union.Total(), slices.Equal(union.counters, whole.counters), n)
		}
		for id := range truth {
			if u, w := union.Estimate(id), whole.Estimate(id); u != w {
				t.Fatalf("Estimate(%v): union %d, whole %d", id, u, w)
			}
		}
		if u, w := union.Top(10), whole.Top(10); !slices.Equal(u, w) {
			t.Fatalf("Top(10): union %v, whole %v", u, w)
		}
		checkTop(t, union, top10)
	})
	t.Run("conservative", func(t *testing.T) {
		checkAccuracy(t, cons, truth)
		checkTop(t, cons, top10)
		checkNotWorse(t, cons, whole, truth)
	})
	t.Run("conservative union", func(t *testing.T) {
		// Conservative update is not linear: the union is not the whole
		// stream's conservative sketch, but still bounds every count and is
		// never worse than plain update.
		if cunion.Total() != n {
			t.Fatalf("Total() = %d, want %d", cunion.Total(), n)
		}
		checkAccuracy(t, cunion, truth)
		checkTop(t, cunion, top10)
		checkNotWorse(t, cunion, whole, truth)
		roundTrip(t, mustEncode(t, cunion))
	})
}

// checkNotWorse checks that cons's counters, hence estimates, are nowhere
// above plain's, and that it overcounts less in total.
func checkNotWorse(t *testing.T, cons, plain *Sketch, truth exactCounts) {
	t.Helper()
	for i := range cons.counters {
		if cons.counters[i] > plain.counters[i] {
			t.Fatalf("counter %d: conservative %d above plain %d", i, cons.counters[i], plain.counters[i])
		}
	}
	var ce, pe uint64
	for id, n := range truth {
		ce += cons.Estimate(id) - n
		pe += plain.Estimate(id) - n
	}
	if ce >= pe {
		t.Errorf("total overcount: conservative %d, plain %d; want conservative smaller", ce, pe)
	}
	t.Logf("total overcount over %d ids: conservative %d, plain %d", len(truth), ce, pe)
}
