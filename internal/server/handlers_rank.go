package server

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/theta"
)

// Limits of POST /v1/rank (docs/operations.md, "Limits"; docs/intersection.md, "One
// against many").
const (
	// maxRankTop bounds "top".
	maxRankTop = 1_000
	// maxRankWorkers bounds the goroutines one rank compares candidates
	// on (at most GOMAXPROCS).
	maxRankWorkers = 4
	// maxRankSkipped bounds the names of skipped candidates an answer
	// lists (it counts them all).
	maxRankSkipped = 10
)

// What a rank orders candidates by ("by").
const (
	rankIntersection = "intersection"
	rankJaccard      = "jaccard"
	rankContainment  = "containment"
)

// Directions of a containment ("direction").
const (
	// targetInCandidate is the share of the target's users that are in
	// the candidate: |T∩C| / |T|.
	targetInCandidate = "target_in_candidate"
	// candidateInTarget is the share of the candidate's users that are
	// in the target: |T∩C| / |C|.
	candidateInTarget = "candidate_in_target"
)

// rankCandidates is a rank's "candidates": {"prefix": P} or a list of
// sketch names and series ranges.
type rankCandidates struct {
	Prefix *string   `json:"prefix"`
	List   []operand `json:"-"`
	set    bool
}

// UnmarshalJSON reads {"prefix": P} or [operand, ...]; the strict
// decoder has refused unknown and repeated keys of the object form.
func (c *rankCandidates) UnmarshalJSON(b []byte) error {
	c.set = true
	t := bytes.TrimSpace(b)
	switch {
	case bytes.HasPrefix(t, []byte("[")):
		// The body's key check sees an object here; the list's own.
		if err := strictUnmarshal(t, &c.List); err != nil {
			var se *sketch.Error
			if errors.As(err, &se) {
				return sketch.Errorf(sketch.Invalid, "candidates: %s", se.Detail)
			}
			return sketch.Wrap(sketch.Invalid, err, "candidates: "+clip(err.Error()))
		}
		return nil
	case bytes.HasPrefix(t, []byte("{")):
		var p struct {
			Prefix *string `json:"prefix"`
		}
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return sketch.Errorf(sketch.Invalid, `candidates: give {"prefix": "..."} or a list of sketch names and series ranges (%v)`, err)
		}
		if p.Prefix == nil {
			return sketch.Errorf(sketch.Invalid, `candidates: give {"prefix": "..."} or a list of sketch names and series ranges`)
		}
		c.Prefix = p.Prefix
		return nil
	}
	return sketch.Errorf(sketch.Invalid, `candidates: give {"prefix": "..."} or a list of sketch names and series ranges`)
}

type rankedRequest struct {
	// Target is a sketch's name or a series range.
	Target *operand `json:"target"`
	// Candidates are what is ranked against the target.
	Candidates rankCandidates `json:"candidates"`
	// By is "intersection", "jaccard" or "containment".
	By string `json:"by"`
	// Direction is a containment's: "target_in_candidate" or
	// "candidate_in_target".
	Direction string `json:"direction"`
	// Top is how many candidates the answer lists, best first.
	Top int `json:"top"`
	// Method is an hll pair's intersection method, as for
	// /v1/intersection (absent: its default).
	Method string `json:"method"`
}

// rankPlan is a validated rank request: every name it reads (the
// target, the candidates' names, series or prefix) is here.
type rankPlan struct {
	target     operand
	prefix     *string
	candidates []operand
	by, dir    string
	top        int
	method     sketch.Method
}

// checkRank validates a rank request and names every sketch and series
// it will read; nothing is read before it. Access to names is checked
// on what it returns.
func checkRank(req *rankedRequest, maxCandidates int) (rankPlan, error) {
	var p rankPlan
	if req.Target == nil {
		return p, sketch.Errorf(sketch.Invalid, "target is missing: give a sketch name or a series range")
	}
	if req.Target.Prefix != nil {
		return p, sketch.Errorf(sketch.Invalid, "target takes a sketch name or a series range, not a prefix")
	}
	if _, err := checkOperands("target", []operand{*req.Target}, 1, 1); err != nil {
		return p, err
	}
	p.target = *req.Target
	switch {
	case !req.Candidates.set:
		return p, sketch.Errorf(sketch.Invalid, `candidates is missing: give {"prefix": "..."} or a list of sketch names and series ranges`)
	case req.Candidates.Prefix != nil:
		if err := checkPrefix("candidates.prefix", *req.Candidates.Prefix); err != nil {
			return p, err
		}
		p.prefix = req.Candidates.Prefix
	default:
		if len(req.Candidates.List) == 0 {
			return p, sketch.Errorf(sketch.Invalid, "candidates is empty: name at least one sketch or series range")
		}
		if len(req.Candidates.List) > maxCandidates {
			return p, sketch.Errorf(sketch.TooLarge, "candidates names %d sketches or series ranges; a rank takes at most %d (-max-rank-candidates)", len(req.Candidates.List), maxCandidates)
		}
		if _, err := checkOperands("candidates", req.Candidates.List, 1, maxCandidates); err != nil {
			return p, err
		}
		seen := make(map[string]int, len(req.Candidates.List))
		for i, o := range req.Candidates.List {
			if o.Prefix != nil {
				return p, sketch.Errorf(sketch.Invalid, `candidates[%d] is a prefix: give {"prefix": "..."} as candidates, or names and series ranges in a list`, i)
			}
			l := o.label()
			if j, ok := seen[l]; ok {
				return p, sketch.Errorf(sketch.Invalid, "candidates[%d] repeats candidates[%d] (%s)", i, j, clip(l))
			}
			seen[l] = i
		}
		p.candidates = req.Candidates.List
	}
	switch req.By {
	case rankIntersection, rankJaccard:
		if req.Direction != "" {
			return p, sketch.Errorf(sketch.Invalid, `direction applies to "by": "containment", not %q`, req.By)
		}
	case rankContainment:
		if req.Direction != targetInCandidate && req.Direction != candidateInTarget {
			return p, sketch.Errorf(sketch.Invalid, `direction=%q: a containment is %q (the share of the target in each candidate) or %q (the share of each candidate in the target)`, clip(req.Direction), targetInCandidate, candidateInTarget)
		}
	default:
		return p, sketch.Errorf(sketch.Invalid, `by=%q: rank by "intersection", "jaccard" or "containment"`, clip(req.By))
	}
	p.by, p.dir = req.By, req.Direction
	if req.Top < 1 || req.Top > maxRankTop {
		return p, sketch.Errorf(sketch.Invalid, "top=%d: give how many candidates to list, 1 to %d", req.Top, maxRankTop)
	}
	p.top = req.Top
	m, err := sketch.ParseMethod(req.Method)
	if err != nil {
		return p, sketch.Wrap(sketch.Invalid, err, `method must be "inclusion_exclusion" or "mle" (or absent for the default)`)
	}
	p.method = m
	return p, nil
}

// handleRankOverlap ranks candidates by their overlap with a target, keeping
// only the best while it reads them one at a time.
func (s *Server) handleRankOverlap(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	var req rankedRequest
	if err := s.decodeJSON(w, r, &req, false); err != nil {
		return err
	}
	plan, err := checkRank(&req, s.cfg.MaxRankCandidates)
	if err != nil {
		return err
	}
	// A token limited to prefixes names only its own, target and
	// candidates alike, before anything is read.
	if err := s.allowOperands(r.Context(), "target", []operand{plan.target}); err != nil {
		return err
	}
	if plan.prefix != nil {
		if err := s.allowPrefix(r.Context(), "candidates.prefix", *plan.prefix); err != nil {
			return err
		}
	}
	if err := s.allowOperands(r.Context(), "candidates", plan.candidates); err != nil {
		return err
	}
	resp, err := s.rank(r.Context(), plan)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, resp)
}

// rankedResponse is the answer of POST /v1/rank.
type rankedResponse struct {
	Target    rankTarget `json:"target"`
	By        string     `json:"by"`
	Direction string     `json:"direction,omitempty"`
	// Method is the estimator of every pair: the intersection's method
	// ("mle", "inclusion_exclusion") or "theta".
	Method string `json:"method"`
	// Scanned counts the candidates compared with the target; Skipped
	// those named but missing. Complete: none was skipped.
	Scanned  int  `json:"scanned"`
	Skipped  int  `json:"skipped"`
	Complete bool `json:"complete"`
	// Results are the top candidates, best first.
	Results []rankResult `json:"results"`
	// ToldApart: every result's bounds are apart from the next one's,
	// the last's from the best candidate left out.
	ToldApart bool     `json:"told_apart"`
	Note      string   `json:"note,omitempty"`
	Warnings  []string `json:"warnings"`
}

// rankTarget is the target's own count, bounds at two standard
// deviations (as GET /v1/sketches/{name} gives them).
type rankTarget struct {
	Name  string  `json:"name"`
	Count float64 `json:"count"`
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
}

// rankResult is one ranked candidate: the measure ranked by with its
// one-sigma error and bounds, the candidate's own count, and the verdict
// of the pair's intersection, all as POST /v1/intersection answers for
// the pair [target, candidate].
type rankResult struct {
	Rank     int     `json:"rank"`
	Name     string  `json:"name"`
	Estimate float64 `json:"estimate"`
	StdError float64 `json:"std_error"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
	Count    float64 `json:"count"`
	// Intersection is the pair's intersection, when the measure is
	// another (jaccard, containment).
	Intersection *bounded `json:"intersection,omitempty"`
	Verdict      string   `json:"verdict"`
	VerdictText  string   `json:"verdict_text"`
	// Warnings are the pair's intersection warnings, the reasons its
	// verdict text refers to ("see the warnings").
	Warnings []string `json:"warnings"`
	// TiedWithNext: this result's lower bound does not clear the next
	// one's upper bound (for the last, the best candidate left out), so
	// their order is not told apart. Group numbers the runs of results
	// so tied, from 1.
	TiedWithNext bool `json:"tied_with_next"`
	Group        int  `json:"group"`
}

// rankEntry is a scanned candidate, kept while it is among the best.
type rankEntry struct {
	name                     string
	value, err, lower, upper float64
	count                    float64
	x                        bounded
	verdict, text, method    string
	warnings                 []string
}

// worse orders entries from the least to the best: by the value, then
// by name (the earlier name ranks first among equal values).
func worse(a, b *rankEntry) bool {
	if a.value != b.value {
		return a.value < b.value
	}
	return a.name > b.name
}

// rankHeap keeps the best entries with the least on top.
type rankHeap []*rankEntry

func (h rankHeap) Len() int           { return len(h) }
func (h rankHeap) Less(i, j int) bool { return worse(h[i], h[j]) }
func (h rankHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *rankHeap) Push(x any)        { *h = append(*h, x.(*rankEntry)) }
func (h *rankHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// ranker compares candidates with the target one at a time, keeping the
// best keep (top + 1: the first left out tells whether the last listed
// is apart from it). It holds the target, keep entries and nothing of
// the candidates it let go.
type ranker struct {
	p      rankPlan
	label  string
	target sketch.Sketch
	z      float64 // how many errors the counts' bounds span, for shares
	sigmaT float64 // the target's relative error
	keep   int
	// mu guards h, n and passed: workers compare candidates in parallel.
	mu sync.Mutex
	h  rankHeap
	n  int
	// passed counts the candidates passed over without an intersection
	// (ceiling); noCeiling compares every candidate (tests).
	passed    int
	noCeiling bool
	// view reads candidates by name (the store's View), for a joint
	// table the target's intersection does not take.
	view func(ctx context.Context, names []string, fn func([]sketch.Sketch) error) error
	// onDatabase counts the candidates compared by their joint tables.
	onDatabase atomic.Int64
}

// ceiling reports whether the candidate sk cannot enter the top K: ranked
// by intersection, an hll candidate's estimate is at most the smaller of
// the two sketches' counts (sketch.IntersectCeiling, computed as the
// intersection computes them), so once K + 1 are kept a candidate whose
// ceiling is below the least of them is passed over, and the answer is
// the one comparing it would give. It counts the candidate as scanned.
func (k *ranker) ceiling(sk sketch.Sketch) bool {
	if k.p.by != rankIntersection || k.noCeiling {
		return false
	}
	t, ok := sketch.HLLOf(k.target)
	if !ok || sk.Kind() != k.target.Kind() {
		return false
	}
	c, _ := sketch.HLLOf(sk)
	if !k.full() {
		return false
	}
	top, ok := sketch.IntersectCeiling(t, c)
	return ok && k.below(top)
}

// full reports whether the top K + 1 are kept, so that a candidate may
// be passed over.
func (k *ranker) full() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.h) == k.keep
}

// below reports whether a candidate whose estimate is at most top
// cannot enter the kept entries, and if so counts it as scanned and
// passed over.
func (k *ranker) below(top float64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.h) < k.keep || !(top < k.h[0].value) {
		return false
	}
	k.n++
	k.passed++
	return true
}

// rankThetaSigmas is how many standard deviations a rank's theta bounds
// span: three, as HLL's 99.73%, where /v1/intersection gives two. A top K
// chosen from thousands favours the candidates whose estimates came out
// high, so its bounds must be wider than one pair's: in cmd/intersim
// rank (10,000 audiences, the top 50), theta's two-standard-deviation
// bounds held the truth for 86-87% of the results called reliable,
// three for 99.3% (docs/intersection.md).
const rankThetaSigmas = 3

// rankable reports whether sk's kind has an intersection a rank reads,
// and how many errors its bounds lie from the estimate.
func rankable(sk sketch.Sketch) (float64, bool) {
	if _, ok := sketch.ThetaOf(sk); ok {
		return rankThetaSigmas, true
	}
	if _, ok := sketch.HLLOf(sk); ok {
		return 3, true
	}
	switch sk.Kind().Type {
	case sketch.TypeDSHLL, sketch.TypeCPC, sketch.TypeZetaHLL, sketch.TypeAirliftHLL:
		return 3, true
	}
	return 0, false
}

// relErr is a sketch's relative standard error: its own, or a quarter of
// its two-sigma bounds' span.
func relErr(in sketch.Info) float64 {
	switch {
	case in.StdError > 0:
		return in.StdError
	case in.Cardinality > 0 && in.Upper > in.Lower:
		return (in.Upper - in.Lower) / (4 * in.Cardinality)
	}
	return 0
}

// add compares the candidate label (sk, which it reads only during the
// call) with the target and keeps it if it is among the best so far.
func (k *ranker) add(label string, sk sketch.Sketch) error {
	if sk.Kind() != k.target.Kind() {
		return sketch.Errorf(sketch.Conflict, "candidates: %s is a %s sketch and the target %s a %s sketch; every candidate must be of the target's kind",
			quoteLabel(label), sk.Kind().Type, quoteLabel(k.label), k.target.Kind().Type)
	}
	if k.ceiling(sk) {
		return nil
	}
	e := &rankEntry{name: label}
	var jac *bounded
	var tCount float64
	if t, ok := sketch.ThetaOf(k.target); ok {
		c, _ := sketch.ThetaOf(sk)
		var err error
		if tCount, jac, err = k.thetaPair(e, t, c); err != nil {
			return err
		}
	} else {
		resp, err := intersect([]string{k.label, label}, []sketch.Sketch{k.target, sk}, k.p.method, nil)
		if err != nil {
			return err
		}
		a, ok := resp.(intersectionResponse)
		if !ok {
			return fmt.Errorf("rank: an intersection answered %T", resp)
		}
		tCount, jac = e.fromIntersection(a)
	}
	k.keepEntry(e, tCount, jac, func(in *sketch.Info) { sk.Describe(in) })
	return nil
}

// addJoint is add for a candidate known by its joint table with the
// target (JointRanker), with the answer add gives the candidate itself.
// A table the target's intersection does not take (sketch.ErrJointIneligible)
// has the candidate read by name instead.
func (k *ranker) addJoint(ctx context.Context, label string, j *sketch.Joint) error {
	t, _ := sketch.HLLOf(k.target)
	pair, err := sketch.PairJoint([]string{k.label, label}, t, j, k.p.method)
	if errors.Is(err, sketch.ErrJointIneligible) && k.view != nil {
		return k.view(ctx, []string{label}, func(sks []sketch.Sketch) error { return k.add(label, sks[0]) })
	}
	if err != nil {
		return err
	}
	if !k.noCeiling && k.p.by == rankIntersection && k.below(pair.Ceiling()) {
		return nil
	}
	e := &rankEntry{name: label}
	tCount, jac := e.fromIntersection(intersectionDTO(pair.Intersect()))
	k.keepEntry(e, tCount, jac, func(in *sketch.Info) {
		a := j.CandidateAnswer(hll.PostgreSQLEstimator)
		in.Cardinality, in.StdError, in.Lower, in.Upper = a.Estimate, a.StdError, a.LowerBound, a.UpperBound
	})
	return nil
}

// fromIntersection fills e from the pair's /v1/intersection answer a and
// returns the target's count and the pair's Jaccard index.
func (e *rankEntry) fromIntersection(a intersectionResponse) (tCount float64, jac *bounded) {
	e.x = bounded{Estimate: a.Estimate, Error: a.Error, Lower: a.Lower, Upper: a.Upper}
	e.verdict, e.text, e.method, e.warnings = a.Verdict, a.VerdictText, a.Method, a.Warnings
	e.count = a.Terms[1].Cardinality
	return a.Terms[0].Cardinality, a.Jaccard
}

// keepEntry sets e's measure (describe gives the candidate's own count
// and error, for a containment in the target) and keeps e if it is among
// the best so far.
func (k *ranker) keepEntry(e *rankEntry, tCount float64, jac *bounded, describe func(*sketch.Info)) {
	switch {
	case k.p.by == rankIntersection:
		e.value, e.err, e.lower, e.upper = e.x.Estimate, e.x.Error, e.x.Lower, e.x.Upper
	case k.p.by == rankJaccard:
		e.value, e.err, e.lower, e.upper = jac.Estimate, jac.Error, jac.Lower, jac.Upper
	case k.p.dir == targetInCandidate:
		e.value, e.err, e.lower, e.upper = share(e.x, tCount, k.sigmaT, k.z)
	default:
		var in sketch.Info
		describe(&in)
		e.value, e.err, e.lower, e.upper = share(e.x, e.count, relErr(in), k.z)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.n++
	switch {
	case len(k.h) < k.keep:
		heap.Push(&k.h, e)
	case worse(k.h[0], e):
		k.h[0] = e
		heap.Fix(&k.h, 0)
	}
}

// thetaPair fills e from one theta intersection of the target t and the
// candidate c: the estimate and the one-sigma error as /v1/intersection
// gives them, bounds and a verdict at rankThetaSigmas, the candidate's
// count; it returns the target's count and, ranked by Jaccard, the
// pair's Jaccard index with /v1/intersection's bounds.
func (k *ranker) thetaPair(e *rankEntry, t, c *theta.Sketch) (tCount float64, jac *bounded, err error) {
	x, err := theta.Intersect(t, c)
	if err != nil {
		return 0, nil, sketch.Wrap(sketch.Invalid, err, "cannot intersect these theta sketches")
	}
	lo1, _ := x.LowerBound(1)
	hi1, _ := x.UpperBound(1)
	lo, _ := x.LowerBound(rankThetaSigmas)
	hi, _ := x.UpperBound(rankThetaSigmas)
	est := x.Estimate()
	v, text, warnings := sketch.JudgeTheta(est, lo, hi, x.Retained(), x.Theta() >= 1 && lo == hi)
	e.x = bounded{Estimate: est, Error: (hi1 - lo1) / 2, Lower: lo, Upper: hi}
	e.verdict, e.text, e.method, e.warnings = string(v), text, "theta", append([]string{}, warnings...)
	e.count = c.Estimate()
	if k.p.by == rankJaccard {
		j := theta.Jaccard(t, c)
		jac = &bounded{Estimate: j.Estimate, Error: (j.Upper - j.Lower) / 4, Lower: j.Lower, Upper: j.Upper}
	}
	return t.Estimate(), jac, nil
}

// errRankStopped stops a store's walk when a worker has failed; the
// worker's error is the answer's.
var errRankStopped = errors.New("rank: stopped")

// parallel compares candidates on workers goroutines: feed lends the
// store's function a candidate (it clones it, and waits while workers
// candidates wait), feedJoint a candidate's joint table with the target
// (JointRanker; the table is the rank's) or, without one, the candidate
// as feed does; wait closes the feed and returns the first worker's
// error. A rank so holds at most 2 × workers candidates at once beside
// its top K. A worker that panics answers an internal error.
func (k *ranker) parallel(ctx context.Context, workers int) (feed func(string, sketch.Sketch) error, feedJoint func(string, *sketch.Joint, sketch.Sketch) error, wait func() error) {
	type job struct {
		label string
		sk    sketch.Sketch
		j     *sketch.Joint
	}
	jobs := make(chan job, workers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	var failed atomic.Bool
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		failed.Store(true)
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					fail(fmt.Errorf("rank: a comparison panicked: %v", p))
					for range jobs {
					}
				}
			}()
			for j := range jobs {
				if failed.Load() {
					continue
				}
				var err error
				if j.j != nil {
					k.onDatabase.Add(1)
					err = k.addJoint(ctx, j.label, j.j)
				} else {
					err = k.add(j.label, j.sk)
				}
				if err != nil {
					fail(err)
				}
			}
		}()
	}
	feed = func(label string, sk sketch.Sketch) error { return feedJoint(label, nil, sk) }
	feedJoint = func(label string, j *sketch.Joint, sk sketch.Sketch) error {
		if failed.Load() {
			return errRankStopped
		}
		jb := job{label: label, j: j}
		if j == nil {
			jb.sk = sk.Clone()
		}
		select {
		case jobs <- jb:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	wait = func() error {
		close(jobs)
		wg.Wait()
		return first
	}
	return feed, feedJoint, wait
}

// share is the intersection x as a share of a set of count c whose
// relative error is sigma, with its one-sigma error (the two relative
// errors in quadrature) and bounds: x's bounds over c's, at z errors,
// held within [0, 1].
func share(x bounded, c, sigma, z float64) (v, err, lo, hi float64) {
	if c <= 0 {
		return 0, 0, 0, 0
	}
	v = min(x.Estimate/c, 1)
	err = math.Hypot(x.Error/c, v*sigma)
	lo = x.Lower / (c * (1 + z*sigma))
	hi = 1.0
	if d := 1 - z*sigma; d > 0 {
		hi = min(1, x.Upper/(c*d))
	}
	return v, err, min(lo, v), max(hi, v)
}

// rankList feeds the candidates of a list one at a time: sketches by
// name (one missing is skipped and returned), series ranges as the
// unions of their buckets, all ranges sharing one budget of planned
// buckets.
func (s *Server) rankList(ctx context.Context, p rankPlan, exclude string, feed func(string, sketch.Sketch) error, resp *rankedResponse) (skipped []string, err error) {
	b := s.budget() // one for all the candidates' ranges
	for _, o := range p.candidates {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if o.Series == "" {
			if o.Name == exclude {
				continue
			}
			err := s.store.View(ctx, []string{o.Name}, func(sks []sketch.Sketch) error { return feed(o.Name, sks[0]) })
			if sketch.KindOf(err) == sketch.NotFound {
				skipped = append(skipped, o.Name)
				continue
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		ss, err := s.seriesStore()
		if err != nil {
			return nil, err
		}
		from, _ := time.Parse(time.RFC3339Nano, o.From)
		to, _ := time.Parse(time.RFC3339Nano, o.To)
		plan, u, err := s.rangeUnion(ctx, ss, o.Series, from, to, b, false)
		if err != nil {
			return nil, err
		}
		for _, w := range plan.Warnings {
			if len(resp.Warnings) < maxRankSkipped*2 {
				resp.Warnings = append(resp.Warnings, o.label()+": "+w)
			}
		}
		if err := feed(o.label(), u); err != nil {
			return nil, err
		}
	}
	return skipped, nil
}

// rankWorkers is how many goroutines a rank compares candidates on.
func rankWorkers() int { return min(runtime.GOMAXPROCS(0), maxRankWorkers) }

// quoteLabel quotes a candidate's label for an error.
func quoteLabel(l string) string { return fmt.Sprintf("%q", clip(l)) }

// rank reads the target, then the candidates one at a time, and answers
// with the best.
func (s *Server) rank(ctx context.Context, p rankPlan) (*rankedResponse, error) {
	sks, warnings, err := s.resolve(ctx, []operand{p.target})
	if err != nil {
		return nil, err
	}
	target := sks[0]
	z, ok := rankable(target)
	if !ok {
		return nil, sketch.Errorf(sketch.Conflict, "target %s is a %s sketch; a rank takes hll, ds_hll, cpc, zeta_hll, airlift_hll or theta sketches", quoteLabel(p.target.label()), target.Kind().Type)
	}
	var tin sketch.Info
	target.Describe(&tin)
	k := &ranker{p: p, label: p.target.label(), target: target, z: z, sigmaT: relErr(tin), keep: p.top + 1}
	k.h = make(rankHeap, 0, k.keep)
	resp := &rankedResponse{
		Target: rankTarget{Name: k.label, Count: finite(tin.Cardinality), Lower: finite(tin.Lower), Upper: finite(tin.Upper)},
		By:     p.by, Direction: p.dir, Warnings: []string{},
	}
	for _, w := range warnings {
		resp.Warnings = append(resp.Warnings, "target "+w)
	}
	exclude := ""
	if p.target.Series == "" {
		exclude = p.target.Name
	}
	var skipped []string
	if p.prefix != nil {
		limit := s.cfg.MaxRankCandidates
		feed, feedJoint, wait := k.parallel(ctx, rankWorkers())
		var n int
		var err error
		jr, ok := s.store.(JointRanker)
		t, isHLL := sketch.HLLOf(target)
		if ok = ok && isHLL && sketch.JointTarget(t, p.method); ok {
			k.view = s.store.View
			n, ok, err = jr.EachPrefixJoint(ctx, *p.prefix, exclude, limit, t, feedJoint)
		}
		if !ok {
			n, err = s.store.EachPrefix(ctx, *p.prefix, exclude, limit, feed)
		}
		if werr := wait(); werr != nil && (err == nil || errors.Is(err, errRankStopped)) {
			err = werr
		}
		if err != nil {
			if sketch.KindOf(err) == sketch.TooLarge {
				return nil, sketch.Errorf(sketch.TooLarge, "more than %d sketches' names start with %s; a rank takes at most %d candidates (-max-rank-candidates): narrow candidates.prefix", limit, quoteLabel(*p.prefix), limit)
			}
			return nil, err
		}
		if n == 0 {
			return nil, sketch.Errorf(sketch.NotFound, "candidates.prefix: no sketch's name starts with %s (the target left out)", quoteLabel(*p.prefix))
		}
	} else {
		feed, _, wait := k.parallel(ctx, rankWorkers())
		skipped, err = s.rankList(ctx, p, exclude, feed, resp)
		if werr := wait(); werr != nil && (err == nil || errors.Is(err, errRankStopped)) {
			err = werr
		}
		if err != nil {
			return nil, err
		}
		if k.n == 0 {
			return nil, sketch.Errorf(sketch.NotFound, "candidates: none of the %d sketches named exists (the target left out)", len(p.candidates))
		}
	}
	s.rankedOnDatabase.Add(k.onDatabase.Load())
	resp.Scanned, resp.Skipped, resp.Complete = k.n, len(skipped), len(skipped) == 0
	if len(skipped) > 0 {
		shown := skipped[:min(len(skipped), maxRankSkipped)]
		qs := make([]string, len(shown))
		for i, n := range shown {
			qs[i] = quoteLabel(n)
		}
		more := ""
		if len(skipped) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(skipped)-len(shown))
		}
		resp.Warnings = append(resp.Warnings, fmt.Sprintf("%d candidates do not exist and were skipped: %s%s", len(skipped), strings.Join(qs, ", "), more))
	}
	k.finish(resp)
	return resp, nil
}

// finish orders the kept entries best first, lists the top, and marks
// the neighbours whose bounds overlap.
func (k *ranker) finish(resp *rankedResponse) {
	best := make([]*rankEntry, len(k.h))
	for i := len(best) - 1; i >= 0; i-- {
		best[i] = heap.Pop(&k.h).(*rankEntry)
	}
	listed := best[:min(len(best), k.p.top)]
	resp.Results = make([]rankResult, len(listed))
	resp.ToldApart = true
	group, tied := 1, 0
	for i, e := range listed {
		if e.method != "" {
			resp.Method = e.method
		}
		r := rankResult{
			Rank: i + 1, Name: e.name, Estimate: finite(e.value), StdError: finite(e.err), Lower: finite(e.lower), Upper: finite(e.upper),
			Count: finite(e.count), Verdict: e.verdict, VerdictText: e.text, Warnings: e.warnings, Group: group,
		}
		if r.Warnings == nil {
			r.Warnings = []string{}
		}
		if k.p.by != rankIntersection {
			x := bounded{Estimate: finite(e.x.Estimate), Error: finite(e.x.Error), Lower: finite(e.x.Lower), Upper: finite(e.x.Upper)}
			r.Intersection = &x
		}
		if i+1 < len(best) && e.lower <= best[i+1].upper {
			r.TiedWithNext = true
			resp.ToldApart = false
			if i+1 < len(listed) {
				tied++
			}
		} else {
			group++
		}
		resp.Results[i] = r
	}
	n := len(listed)
	if n == 0 {
		return
	}
	groups := resp.Results[n-1].Group
	switch {
	case n > 1 && tied == n-1:
		resp.Note = fmt.Sprintf("None of the top %d can be told apart: each one's bounds overlap the next one's, so their order is only that of the estimates.", n)
	case tied > 0:
		resp.Note = fmt.Sprintf("Not every neighbour is told apart: a result marked tied_with_next has bounds that overlap the next one's; the %d results fall in %d groups (group) whose order is known.", n, groups)
	}
	if n < len(best) && resp.Results[n-1].TiedWithNext {
		if resp.Note != "" {
			resp.Note += " "
		}
		resp.Note += fmt.Sprintf("The last listed cannot be told apart from %s, the best candidate not listed.", quoteLabel(best[n].name))
	}
}
