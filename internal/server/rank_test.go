package server

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/theta"
)

// rankAnswer is the answer of POST /v1/rank.
type rankAnswer struct {
	Target struct {
		Name                string
		Count, Lower, Upper float64
	}
	By, Direction, Method string
	Scanned, Skipped      int
	Complete              bool
	Results               []rankRow
	ToldApart             bool `json:"told_apart"`
	Note                  string
	Warnings              []string
}

type rankRow struct {
	Rank         int
	Name         string
	Estimate     float64
	StdError     float64 `json:"std_error"`
	Lower, Upper float64
	Count        float64
	Intersection *struct{ Estimate, Error, Lower, Upper float64 }
	Verdict      string
	VerdictText  string `json:"verdict_text"`
	Warnings     []string
	TiedWithNext bool `json:"tied_with_next"`
	Group        int
}

// rankSet is a target and candidates of known sizes and overlaps.
type rankSet struct {
	target  int            // |T|: ids 0..target-1
	size    map[string]int // each candidate's size
	overlap map[string]int // |T ∩ C|
}

// buildRankSet creates the sketch "t" of spec holding target ids and n
// candidates "c:NNN" of skewed sizes (500 to 32,000, log-uniform) whose
// overlaps with t are a skewed share of the smaller set (most small,
// a few large): the shared ids are a run of t's starting anywhere in it,
// the rest ids no other set holds.
func buildRankSet(tb testing.TB, e *env, spec string, target, n int, seed uint64) rankSet {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	rs := rankSet{target: target, size: map[string]int{}, overlap: map[string]int{}}
	e.create(tb, "t", spec)
	must(tb, e.send(tb, http.MethodPost, "/v1/sketches/t/add", "application/octet-stream", octetIDs(idRange(0, int64(target))...)), http.StatusOK, "add t")
	shares := []float64{0, 0, 0.002, 0.01, 0.02, 0.05, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1}
	for i := range n {
		name := fmt.Sprintf("c:%03d", i)
		size := int(500 * math.Pow(64, rng.Float64()))
		o := int(float64(min(size, target)) * shares[rng.IntN(len(shares))])
		start := rng.IntN(target)
		ids := make([]int64, 0, size)
		for j := range o {
			ids = append(ids, int64((start+j)%target))
		}
		ids = append(ids, idRange(int64(1e9+i*1e6), int64(1e9+i*1e6+size-o))...)
		e.create(tb, name, spec)
		must(tb, e.send(tb, http.MethodPost, "/v1/sketches/"+name+"/add", "application/octet-stream", octetIDs(ids...)), http.StatusOK, "add "+name)
		rs.size[name], rs.overlap[name] = size, o
	}
	return rs
}

// truth is the exact value of the measure by (and direction) for a
// candidate.
func (rs rankSet) truth(by, dir, name string) float64 {
	o, c, t := float64(rs.overlap[name]), float64(rs.size[name]), float64(rs.target)
	switch {
	case by == "intersection":
		return o
	case by == "jaccard":
		return o / (t + c - o)
	case dir == "target_in_candidate":
		return o / t
	}
	return o / c
}

func (e *env) rank(tb testing.TB, body string) rankAnswer {
	tb.Helper()
	var a rankAnswer
	decode(tb, must(tb, e.postJSON(tb, "/v1/rank", body), http.StatusOK, "rank "+body).Body, &a)
	return a
}

// checkRankTruth holds a rank's answer to the truth: the true value of
// every listed candidate inside its bounds (all but misses of them,
// returned), the order of results told apart (different groups) that of
// the truth, and no candidate left out whose true value is above the
// last listed's upper bound.
func checkRankTruth(tb testing.TB, rs rankSet, by, dir string, a rankAnswer, top int) (covered, listed int) {
	tb.Helper()
	if a.Scanned != len(rs.size) || !a.Complete || len(a.Results) != top {
		tb.Fatalf("%s %s: scanned %d (complete %v) and listed %d, want %d and %d", by, dir, a.Scanned, a.Complete, len(a.Results), len(rs.size), top)
	}
	in := map[string]bool{}
	for i, r := range a.Results {
		in[r.Name] = true
		truth := rs.truth(by, dir, r.Name)
		listed++
		if r.Lower <= truth && truth <= r.Upper {
			covered++
		} else {
			tb.Logf("%s %s: #%d %s = %.4g [%.4g, %.4g] (%s), truth %.4g", by, dir, r.Rank, r.Name, r.Estimate, r.Lower, r.Upper, r.Verdict, truth)
		}
		if r.Count <= 0 || math.Abs(r.Count-float64(rs.size[r.Name])) > 0.1*float64(rs.size[r.Name]) {
			tb.Errorf("%s: count %v, want about %d", r.Name, r.Count, rs.size[r.Name])
		}
		if i > 0 && r.Estimate > a.Results[i-1].Estimate {
			tb.Errorf("%s %s: #%d (%v) above #%d (%v)", by, dir, r.Rank, r.Estimate, i, a.Results[i-1].Estimate)
		}
		for _, q := range a.Results[:i] {
			if q.Group < r.Group && rs.truth(by, dir, q.Name) <= truth {
				tb.Errorf("%s %s: %s (group %d, truth %.4g) is told apart above %s (group %d, truth %.4g)",
					by, dir, q.Name, q.Group, rs.truth(by, dir, q.Name), r.Name, r.Group, truth)
			}
		}
		wantTied := i+1 < len(a.Results) && r.Lower <= a.Results[i+1].Upper
		if i+1 < len(a.Results) && r.TiedWithNext != wantTied {
			tb.Errorf("%s: tied_with_next %v, but its bounds [%v, %v] against the next's upper %v", r.Name, r.TiedWithNext, r.Lower, r.Upper, a.Results[i+1].Upper)
		}
	}
	last := a.Results[len(a.Results)-1]
	for name := range rs.size {
		if !in[name] && rs.truth(by, dir, name) > last.Upper {
			tb.Errorf("%s %s: %s (truth %.4g) is left out, above the last listed's upper bound %.4g", by, dir, name, rs.truth(by, dir, name), last.Upper)
		}
	}
	return covered, listed
}

// TestRankAgainstTruth: a target of 30,000 ids against 200 hll
// candidates of skewed sizes and overlaps, ranked by each measure. The
// truth of every listed candidate lies inside its bounds (99.73% bounds:
// at most one miss in the 60 listed), the order of results told apart is
// the truth's, nothing left out is truly above the last listed, and each
// result's numbers are those POST /v1/intersection gives for the pair.
func TestRankAgainstTruth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rs := buildRankSet(t, e, `{"type":"hll","log2m":14}`, 30000, 200, 1)
	covered, listed := 0, 0
	for _, m := range []struct{ by, dir string }{
		{"intersection", ""}, {"jaccard", ""}, {"containment", "target_in_candidate"}, {"containment", "candidate_in_target"},
	} {
		dir := ""
		if m.dir != "" {
			dir = fmt.Sprintf(`,"direction":%q`, m.dir)
		}
		a := e.rank(t, fmt.Sprintf(`{"target":"t","candidates":{"prefix":"c:"},"by":%q%s,"top":15}`, m.by, dir))
		c, l := checkRankTruth(t, rs, m.by, m.dir, a, 15)
		covered, listed = covered+c, listed+l
		if a.Target.Name != "t" || math.Abs(a.Target.Count-30000) > 900 || a.Method != "mle" {
			t.Errorf("target %+v, method %q; want t of about 30,000, mle", a.Target, a.Method)
		}
		// The same numbers as /v1/intersection of each pair.
		for _, r := range a.Results[:5] {
			var x intersectionAnswer
			decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["t","`+r.Name+`"]}`), http.StatusOK, "pair").Body, &x)
			got := r.Intersection
			if m.by == "intersection" {
				if r.Intersection != nil {
					t.Errorf("by intersection, %s repeats the intersection", r.Name)
				}
				got = &struct{ Estimate, Error, Lower, Upper float64 }{r.Estimate, r.StdError, r.Lower, r.Upper}
			}
			if got.Estimate != x.Estimate || got.Error != x.Error || got.Lower != x.Lower || got.Upper != x.Upper ||
				r.Verdict != x.Verdict || r.VerdictText != x.VerdictText {
				t.Errorf("%s: %+v %s %q; /v1/intersection %v ± %v [%v, %v] %s %q", r.Name, got, r.Verdict, r.VerdictText,
					x.Estimate, x.Error, x.Lower, x.Upper, x.Verdict, x.VerdictText)
			}
			if m.by == "jaccard" && (r.Estimate != x.Jaccard.Estimate || r.Lower != x.Jaccard.Lower || r.Upper != x.Jaccard.Upper) {
				t.Errorf("%s: jaccard %v [%v, %v], /v1/intersection's %+v", r.Name, r.Estimate, r.Lower, r.Upper, *x.Jaccard)
			}
		}
	}
	if listed-covered > 1 {
		t.Errorf("the bounds held the truth of %d of %d listed candidates, want all but at most one", covered, listed)
	}
}

// intersectionAnswer is the part of POST /v1/intersection's answer a
// rank repeats.
type intersectionAnswer struct {
	Estimate, Error, Lower, Upper float64
	Verdict                       string
	VerdictText                   string `json:"verdict_text"`
	Method                        string
	Jaccard                       *struct{ Estimate, Error, Lower, Upper float64 }
}

// TestRankKinds: every kind a rank takes, 60 candidates each against a
// target of 20,000 ids, by intersection: the truth of the listed inside
// their bounds (at most one miss of 8 per kind: theta's bounds are at two
// standard deviations), the order told apart that of the truth, and each
// result's numbers those of /v1/intersection for the pair.
func TestRankKinds(t *testing.T) {
	t.Parallel()
	for _, k := range []struct{ spec, method string }{
		{`{"type":"theta"}`, "theta"},
		{`{"type":"ds_hll"}`, "inclusion_exclusion"},
		{`{"type":"cpc"}`, "inclusion_exclusion"},
		{`{"type":"zeta_hll"}`, "inclusion_exclusion"},
		{`{"type":"airlift_hll"}`, "inclusion_exclusion"},
		{`{"type":"hll","log2m":12}`, "mle"},
	} {
		t.Run(k.spec, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			rs := buildRankSet(t, e, k.spec, 20000, 60, 2)
			a := e.rank(t, `{"target":"t","candidates":{"prefix":"c:"},"by":"intersection","top":8}`)
			if covered, listed := checkRankTruth(t, rs, "intersection", "", a, 8); listed-covered > 1 {
				t.Errorf("the bounds held the truth of %d of %d listed candidates", covered, listed)
			}
			if a.Method != k.method {
				t.Errorf("method %q, want %q", a.Method, k.method)
			}
			for _, r := range a.Results {
				var x intersectionAnswer
				decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["t","`+r.Name+`"]}`), http.StatusOK, "pair").Body, &x)
				if k.method == "theta" {
					// The pair's estimate and error; bounds and verdict
					// at three standard deviations (rankThetaSigmas).
					ts, err := theta.Decode(e.raw(t, "t"))
					if err != nil {
						t.Fatal(err)
					}
					cs, err := theta.Decode(e.raw(t, r.Name))
					if err != nil {
						t.Fatal(err)
					}
					p, err := theta.Intersect(ts, cs)
					if err != nil {
						t.Fatal(err)
					}
					x.Lower, _ = p.LowerBound(3)
					x.Upper, _ = p.UpperBound(3)
					v, text, _ := sketch.JudgeTheta(x.Estimate, x.Lower, x.Upper, p.Retained(), p.Theta() >= 1 && x.Lower == x.Upper)
					x.Verdict, x.VerdictText = string(v), text
					if x.Error > 0 && x.Upper-x.Lower <= 4*x.Error {
						t.Errorf("%s: three-sigma bounds [%v, %v] no wider than two sigma's (error %v)", r.Name, x.Lower, x.Upper, x.Error)
					}
				}
				if r.Estimate != x.Estimate || r.StdError != x.Error || r.Lower != x.Lower || r.Upper != x.Upper || r.Verdict != x.Verdict || r.VerdictText != x.VerdictText {
					t.Errorf("%s: %v ± %v [%v, %v] %s; want %+v", r.Name, r.Estimate, r.StdError, r.Lower, r.Upper, r.Verdict, x)
				}
			}
		})
	}
}

// TestRankRefusals: each bad request is a 4xx problem naming what was
// wrong (the field, or the limit), and changes nothing.
func TestRankRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *Config) { c.MaxRankCandidates = 5 }))
	e.create(t, "t", `{"type":"hll"}`)
	e.addIDs(t, "t", idsJSON(idRange(0, 100)...), 100)
	for i := range 5 {
		name := fmt.Sprintf("c:%d", i)
		e.create(t, name, `{"type":"hll"}`)
		e.addIDs(t, name, idsJSON(idRange(int64(i*20), int64(i*20+50))...), 50)
	}
	e.create(t, "m:hll", `{"type":"hll"}`)
	e.create(t, "m:cms", `{"type":"cms"}`)
	e.create(t, "k", `{"type":"cms"}`)
	for i := range 6 {
		e.create(t, fmt.Sprintf("six:%d", i), `{"type":"hll"}`)
	}
	before := e.snapshot(t)
	ok := `"candidates":{"prefix":"c:"},"by":"intersection","top":3`
	for _, c := range []struct {
		body   string
		status int
		says   string
	}{
		{`{` + ok + `}`, 400, "target"},
		{`{"target":{"prefix":"c:"},` + ok + `}`, 400, "target"},
		{`{"target":"é",` + ok + `}`, 400, "target"},
		{`{"target":"nothing",` + ok + `}`, 404, "nothing"},
		{`{"target":"k",` + ok + `}`, 409, "target"},
		{`{"target":"t","by":"intersection","top":3}`, 400, "candidates"},
		{`{"target":"t","candidates":[],"by":"intersection","top":3}`, 400, "candidates"},
		{`{"target":"t","candidates":"c:","by":"intersection","top":3}`, 400, "candidates"},
		{`{"target":"t","candidates":{"prefix":"c:","x":1},"by":"intersection","top":3}`, 400, "candidates"},
		{`{"target":"t","candidates":{},"by":"intersection","top":3}`, 400, "candidates"},
		{`{"target":"t","candidates":{"prefix":"c*"},"by":"intersection","top":3}`, 400, "candidates.prefix"},
		{`{"target":"t","candidates":["c:1","c:1"],"by":"intersection","top":3}`, 400, "candidates[1]"},
		{`{"target":"t","candidates":["c:1",{"prefix":"c:"}],"by":"intersection","top":3}`, 400, "candidates[1]"},
		{`{"target":"t","candidates":["c:1",{"series":"s","frm":"x"}],"by":"intersection","top":3}`, 400, "frm"},
		{`{"target":"t","candidates":{"prefix":"nothing:"},"by":"intersection","top":3}`, 404, "candidates.prefix"},
		{`{"target":"t","candidates":["ghost"],"by":"intersection","top":3}`, 404, "candidates"},
		{`{"target":"t","candidates":{"prefix":"m:"},"by":"intersection","top":3}`, 409, "m:cms"},
		{`{"target":"t","candidates":{"prefix":"six:"},"by":"intersection","top":3}`, 413, "at most 5"},
		{`{"target":"t","candidates":["c:0","c:1","c:2","c:3","c:4","six:0"],"by":"intersection","top":3}`, 413, "-max-rank-candidates"},
		{`{"target":"t","candidates":{"prefix":"c:"},"by":"union","top":3}`, 400, "by"},
		{`{"target":"t","candidates":{"prefix":"c:"},"top":3}`, 400, "by"},
		{`{"target":"t","candidates":{"prefix":"c:"},"by":"containment","top":3}`, 400, "direction"},
		{`{"target":"t","candidates":{"prefix":"c:"},"by":"containment","direction":"both","top":3}`, 400, "direction"},
		{`{"target":"t","candidates":{"prefix":"c:"},"by":"jaccard","direction":"target_in_candidate","top":3}`, 400, "direction"},
		{`{"target":"t","candidates":{"prefix":"c:"},"by":"intersection"}`, 400, "top"},
		{`{"target":"t","candidates":{"prefix":"c:"},"by":"intersection","top":0}`, 400, "top"},
		{`{"target":"t","candidates":{"prefix":"c:"},"by":"intersection","top":-1}`, 400, "top"},
		{`{"target":"t","candidates":{"prefix":"c:"},"by":"intersection","top":1001}`, 400, "top"},
		{`{"target":"t","candidates":{"prefix":"c:"},"by":"intersection","top":1e400}`, 400, "top"},
		{`{"target":"t",` + ok + `,"method":"guess"}`, 400, "method"},
		{`{"target":"t",` + ok + `,"extra":1}`, 400, "extra"},
	} {
		p := checkProblem(t, e.postJSON(t, "/v1/rank", c.body), c.status)
		if !strings.Contains(p.Detail, c.says) {
			t.Errorf("%s: %q, want it to name %q", c.body, p.Detail, c.says)
		}
	}
	if d := before.diff(e.snapshot(t)); len(d) > 0 {
		t.Errorf("refused ranks changed the store: %v", d)
	}
	// Within the limits: the target is never its own candidate, and a
	// named candidate that does not exist is skipped and said.
	a := e.rank(t, `{"target":"t","candidates":["t","c:0","ghost","c:4"],"by":"intersection","top":5}`)
	if a.Scanned != 2 || a.Skipped != 1 || a.Complete || len(a.Results) != 2 || len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], `"ghost"`) {
		t.Errorf("a list naming the target and a missing sketch: %+v; want c:0 and c:4 scanned, ghost skipped and named", a)
	}
	e.create(t, "c:t", `{"type":"hll"}`)
	e.addIDs(t, "c:t", idsJSON(idRange(0, 100)...), 100)
	a = e.rank(t, `{"target":"c:t","candidates":{"prefix":"c:"},"by":"intersection","top":5}`)
	if a.Scanned != 5 || !a.Complete || len(a.Results) != 5 || a.Results[0].Name == "c:t" {
		t.Errorf("a target under the candidates' prefix: %+v; want the 5 others", a)
	}
}

// TestRankSeriesRanges: series ranges as candidates and as the target
// are each the union of their buckets, answered as /v1/intersection
// answers the same operands.
func TestRankSeriesRanges(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", `{"levels":{"day":"P30D"}}`), http.StatusCreated, "create")
	now := time.Now().UTC()
	day0 := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -3)
	// Day d holds ids 1000·d .. 1000·d + 3000: days share less the
	// farther apart they are. Each is stamped with its day's first
	// instant, never ahead of the clock: an hour in, today's add was
	// refused in the first hour after midnight.
	for d := range 4 {
		must(t, e.postJSON(t, "/v1/series/s/add?ts="+rfc(day0.AddDate(0, 0, d)), idsJSON(idRange(int64(1000*d), int64(1000*d+3000))...)), http.StatusOK, "add")
	}
	e.create(t, "t", `{"type":"hll"}`)
	e.addIDs(t, "t", idsJSON(idRange(0, 3000)...), 3000)
	day := func(d int) string {
		return fmt.Sprintf(`{"series":"s","from":%q,"to":%q}`, day0.AddDate(0, 0, d).Format(time.RFC3339), day0.AddDate(0, 0, d+1).Format(time.RFC3339))
	}
	a := e.rank(t, `{"target":"t","candidates":[`+day(3)+`,`+day(1)+`,`+day(2)+`],"by":"intersection","top":2}`)
	if len(a.Results) != 2 || a.Scanned != 3 || !strings.HasPrefix(a.Results[0].Name, "s[") {
		t.Fatalf("rank of series ranges: %+v", a)
	}
	for i, d := range []int{1, 2} {
		var x intersectionAnswer
		decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["t",`+day(d)+`]}`), http.StatusOK, "pair").Body, &x)
		r := a.Results[i]
		if r.Estimate != x.Estimate || r.Lower != x.Lower || r.Upper != x.Upper || r.Verdict != x.Verdict {
			t.Errorf("day %d ranked #%d: %+v; /v1/intersection %+v", d, i+1, r, x)
		}
	}
	// A series range as the target.
	a = e.rank(t, `{"target":`+day(0)+`,"candidates":["t"],"by":"containment","direction":"candidate_in_target","top":1}`)
	if len(a.Results) != 1 || a.Results[0].Lower > 1 || a.Results[0].Upper < 1 || a.Target.Count < 2900 || a.Target.Count > 3100 {
		t.Errorf("t inside day 0: %+v, want a share holding 1", a)
	}
}

// FuzzRank: any body to POST /v1/rank is answered with a ranking or a
// 4xx problem, and changes nothing.
func FuzzRank(f *testing.F) {
	e, first := cohortFuzzEnv(f)
	day := fmt.Sprintf(`{"series":"s","from":%q,"to":%q}`, first.Format(time.RFC3339), first.AddDate(0, 0, 2).Format(time.RFC3339))
	for _, b := range []string{
		`{"target":"dau:` + first.Format("2006-01-02") + `","candidates":{"prefix":"dau:"},"by":"intersection","top":2}`,
		`{"target":` + day + `,"candidates":{"prefix":"dau:"},"by":"jaccard","top":1,"method":"inclusion_exclusion"}`,
		`{"target":"th","candidates":["th",` + day + `],"by":"containment","direction":"candidate_in_target","top":3}`,
		`{"target":"dau:x","candidates":[{"prefix":""}],"by":"containment","direction":"target_in_candidate","top":1000}`,
		`{"target":{"series":"s","from":"x","to":"y"},"candidates":{"prefix":"d","x":1},"by":"x","top":-1}`,
		`{"target":"s","candidates":{},"by":"intersection","top":1e9}`,
		`{"target":"s","candidates":[[]],"by":"intersection","top":1}`,
		`[]`, `{`, `null`, `{"candidates":null}`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := e.snapshot(t)
		r := e.postJSON(t, "/v1/rank", string(body))
		if r.Status != http.StatusOK {
			checkRefusal(t, r)
		}
		if d := before.diff(e.snapshot(t)); len(d) > 0 {
			t.Fatalf("a rank (%v) changed the store: %v", r, d)
		}
	})
}

// TestRankToldApart: candidates whose overlaps with the target are
// nearly equal cannot be told apart, and the answer says so (every
// result tied, one group, told_apart false, a note naming the top);
// candidates whose overlaps are far apart are told apart, with no note.
func TestRankToldApart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "t", `{"type":"hll","log2m":11}`)
	e.addIDs(t, "t", idsJSON(idRange(0, 50000)...), 50000)
	for i := range 6 {
		// near:i shares 2,000 + 10·i ids with t, far:i 40,000 / 2^i.
		near := fmt.Sprintf("near:%d", i)
		e.create(t, near, `{"type":"hll","log2m":11}`)
		ids := append(idRange(int64(1000*i), int64(1000*i+2000+10*i)), idRange(int64(1e6+1e5*i), int64(1e6+1e5*i+8000))...)
		e.addIDs(t, near, idsJSON(ids...), len(ids))
		far := fmt.Sprintf("far:%d", i)
		e.create(t, far, `{"type":"hll","log2m":11}`)
		shared := []int64{40000, 20000, 10000, 5000, 2500, 1250}[i]
		ids = append(idRange(0, shared), idRange(int64(2e6+1e5*i), int64(2e6+1e5*i+5000))...)
		e.addIDs(t, far, idsJSON(ids...), len(ids))
	}
	a := e.rank(t, `{"target":"t","candidates":{"prefix":"near:"},"by":"intersection","top":4}`)
	if a.ToldApart || !strings.HasPrefix(a.Note, "None of the top 4 can be told apart") {
		t.Errorf("nearly equal overlaps: told_apart %v, note %q", a.ToldApart, a.Note)
	}
	for _, r := range a.Results {
		if !r.TiedWithNext || r.Group != 1 {
			t.Errorf("nearly equal overlaps: %s tied %v, group %d; want tied, group 1", r.Name, r.TiedWithNext, r.Group)
		}
	}
	a = e.rank(t, `{"target":"t","candidates":{"prefix":"far:"},"by":"intersection","top":4}`)
	if !a.ToldApart || a.Note != "" {
		t.Errorf("far apart overlaps: told_apart %v, note %q", a.ToldApart, a.Note)
	}
	for i, r := range a.Results {
		if r.Name != fmt.Sprintf("far:%d", i) || r.TiedWithNext || r.Group != i+1 {
			t.Errorf("far apart overlaps: #%d is %s, tied %v, group %d", i+1, r.Name, r.TiedWithNext, r.Group)
		}
	}
}

// TestRankResultWarnings: every result carries its pair's warnings, the
// ones /v1/intersection gives for the same pair and method, so a verdict
// text that says "see the warnings" has them beside it.
func TestRankResultWarnings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "t", `{"type":"hll","log2m":11}`)
	e.addIDs(t, "t", idsJSON(idRange(0, 200000)...), 200000)
	for i, shared := range []int64{100000, 15000, 8000, 400} {
		name := fmt.Sprintf("c:%d", i)
		e.create(t, name, `{"type":"hll","log2m":11}`)
		ids := append(idRange(0, shared), idRange(int64(1e6+1e5*i), int64(1e6+1e5*i+20000))...)
		e.addIDs(t, name, idsJSON(ids...), len(ids))
	}
	for _, method := range []string{"mle", "inclusion_exclusion"} {
		a := e.rank(t, `{"target":"t","candidates":{"prefix":"c:"},"by":"intersection","top":4,"method":"`+method+`"}`)
		referred := 0
		for _, r := range a.Results {
			var x struct{ Warnings []string }
			decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["t","`+r.Name+`"],"method":"`+method+`"}`), http.StatusOK, "intersection").Body, &x)
			if r.Warnings == nil || !slices.Equal(r.Warnings, x.Warnings) {
				t.Errorf("%s %s: the result's warnings %q, /v1/intersection's %q", method, r.Name, r.Warnings, x.Warnings)
			}
			if strings.Contains(r.VerdictText, "see the warnings") {
				referred++
				if len(r.Warnings) == 0 {
					t.Errorf("%s %s: the verdict text %q refers to warnings, and the result has none", method, r.Name, r.VerdictText)
				}
			}
		}
		if referred == 0 {
			t.Errorf("%s: no result's verdict text refers to its warnings; the fixture no longer tests them", method)
		}
	}
}

// TestRankCeiling: ranked by intersection, a candidate whose count is
// below the least of the K + 1 kept cannot enter, and is passed over
// without an intersection; the answer is the one comparing every
// candidate gives, field for field, for both methods, with the target
// the larger or the smaller set, and candidates of another precision
// (compared folded, as the intersection folds them).
func TestRankCeiling(t *testing.T) {
	t.Parallel()
	p := hll.Params{Log2m: 11, Regwidth: 5, Expthresh: -1, Sparse: true}
	fine := hll.Params{Log2m: 12, Regwidth: 5, Expthresh: -1, Sparse: true}
	for _, tc := range []struct {
		name   string
		target int64
	}{{"large target", 400000}, {"small target", 30000}} {
		target := sketch.NewHLL(hllOf(t, p, idRange(0, tc.target)...))
		var labels []string
		var cands []sketch.Sketch
		for i := range 60 {
			// The first 15 share many ids; then 6 lie inside the target;
			// the rest are small, a few of them EXPLICIT, some sharing a
			// few ids, some of log2m 12.
			size, shared := int64(2000+40*i), int64(20*i)
			switch {
			case i < 15:
				size, shared = int64(50000+3000*i), int64(20000+1000*i)
			case i < 21:
				// Inside the target, of about the kept overlaps'
				// size: they enter the top K after it is full.
				size = min(int64(24000+2000*(i-15)), tc.target)
				shared = size
			}
			q := p
			if i%7 == 3 {
				q = fine
			}
			if i%11 == 5 {
				size, shared = 40, 10
			}
			ids := append(idRange(0, shared), idRange(int64(1e7+1e5*i), int64(1e7+1e5*i)+size-shared)...)
			labels = append(labels, fmt.Sprintf("c:%02d", i))
			cands = append(cands, sketch.NewHLL(hllOf(t, q, ids...)))
		}
		for _, method := range []sketch.Method{sketch.MethodMLE, sketch.MethodInclusionExclusion} {
			answer := func(noCeiling bool) ([]byte, int) {
				plan := rankPlan{by: rankIntersection, top: 10, method: method}
				k := &ranker{p: plan, label: "t", target: target, z: 3, keep: plan.top + 1, noCeiling: noCeiling}
				for i := range labels {
					if err := k.add(labels[i], cands[i]); err != nil {
						t.Fatal(err)
					}
				}
				if k.n != len(labels) {
					t.Fatalf("%s %s: scanned %d of %d", tc.name, method, k.n, len(labels))
				}
				var resp rankedResponse
				k.finish(&resp)
				b, err := json.Marshal(resp)
				if err != nil {
					t.Fatal(err)
				}
				return b, k.passed
			}
			all, none := answer(true)
			got, passed := answer(false)
			if none != 0 {
				t.Fatalf("%s %s: %d passed over with the ceiling off", tc.name, method, none)
			}
			if passed < 20 {
				t.Errorf("%s %s: only %d of the 39 small candidates were passed over", tc.name, method, passed)
			}
			if string(got) != string(all) {
				t.Errorf("%s %s: with %d passed over the answer is\n%s\ncomparing every candidate\n%s", tc.name, method, passed, got, all)
			}
		}
	}
}
