package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/freq"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// seriesStore returns the backend's series part, or a 501 when the
// backend keeps none.
func (s *Server) seriesStore() (SeriesStore, error) {
	ss, ok := s.store.(SeriesStore)
	if !ok {
		return nil, &httpError{http.StatusNotImplemented, "this storage backend does not keep series yet"}
	}
	return ss, nil
}

// timeParam parses an RFC 3339 query parameter; required unless def is
// given (non-zero).
func timeParam(q map[string][]string, k string, def time.Time) (time.Time, error) {
	v, ok := first(q, k)
	if !ok {
		if def.IsZero() {
			return time.Time{}, sketch.Errorf(sketch.Invalid, "query parameter %s is required (RFC 3339, like 2026-11-17T00:00:00Z)", k)
		}
		return def, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, sketch.Errorf(sketch.Invalid, "query parameter %s=%q is not an RFC 3339 time, like 2026-11-17T00:00:00Z", k, clip(v))
	}
	return t, nil
}

func durationParam(q map[string][]string, k, def string) (series.Duration, error) {
	v, ok := first(q, k)
	if !ok {
		v = def
	}
	return series.ParseField("query parameter "+k, v)
}

func (s *Server) handleSeriesCreate(w http.ResponseWriter, r *http.Request) error {
	name, _, ss, err := s.seriesRoute(r)
	if err != nil {
		return err
	}
	var req seriesRequest
	if err := s.decodeJSON(w, r, &req, false); err != nil {
		return err
	}
	spec, err := req.spec()
	if err != nil {
		return err
	}
	return s.commit(w, r, func(res idem.Result) (*answer, error) {
		if !res.Created {
			return jsonAnswer(http.StatusOK, describeSeries(res.Series))
		}
		a, err := jsonAnswer(http.StatusCreated, describeSeries(res.Series))
		if a != nil {
			a.location = "/v1/series/" + name
		}
		return a, err
	}, func(ctx context.Context) (res idem.Result, err error) {
		res.Series, res.Created, err = ss.CreateSeries(ctx, name, spec)
		return res, err
	})
}

func (s *Server) handleSeriesDescribe(w http.ResponseWriter, r *http.Request) error {
	name, _, ss, err := s.seriesRoute(r)
	if err != nil {
		return err
	}
	info, err := ss.DescribeSeries(r.Context(), name)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, describeSeries(info))
}

func (s *Server) handleSeriesDelete(w http.ResponseWriter, r *http.Request) error {
	name, _, ss, err := s.seriesRoute(r)
	if err != nil {
		return err
	}
	if err := s.takeWriteSlot(r.Context()); err != nil {
		return err
	}
	return s.commit(w, r, noContent, func(ctx context.Context) (idem.Result, error) {
		return idem.Result{}, ss.DeleteSeries(ctx, name)
	})
}

// skippingSeriesLister is a SeriesStore whose listing reports, by quoted
// name, the series it skipped because a stored record of theirs is
// damaged.
type skippingSeriesLister interface {
	ListSeriesSkipping(ctx context.Context, prefix, after string, limit int) ([]series.Info, bool, []string, error)
}

func (s *Server) handleSeriesList(w http.ResponseWriter, r *http.Request) error {
	_, prefix, after, limit, err := listParams(r)
	if err != nil {
		return err
	}
	ss, err := s.seriesStore()
	if err != nil {
		return err
	}
	// A token limited to prefixes lists only what it may see.
	infos, more, skipped, err := listWithin(r.Context(), prefix, after, limit, func(prefix, after string, limit int) ([]series.Info, bool, []string, error) {
		if sl, ok := ss.(skippingSeriesLister); ok {
			return sl.ListSeriesSkipping(r.Context(), prefix, after, limit)
		}
		infos, more, err := ss.ListSeries(r.Context(), prefix, after, limit)
		return infos, more, nil, err
	})
	if err != nil {
		return err
	}
	if len(skipped) > 0 {
		w.Header().Set("Sketchd-Unreadable", strings.Join(skipped, ", "))
	}
	resp := seriesListResponse{Series: make([]seriesResponse, len(infos))}
	for i, in := range infos {
		resp.Series[i] = describeSeries(in)
	}
	if more {
		resp.Next = infos[len(infos)-1].Name
	}
	return writeJSON(w, http.StatusOK, resp)
}

// handleSeriesAdd adds ids stamped ?ts= (default now) in every body format
// of a sketch add; 200 once durable.
func (s *Server) handleSeriesAdd(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	q, err := query(r, "ts", "id_type", "byte_order")
	if err != nil {
		return err
	}
	ts, err := timeParam(q, "ts", time.Now())
	if err != nil {
		return err
	}
	ss, err := s.seriesStore()
	if err != nil {
		return err
	}
	return s.addBodyAnswer(w, r, q, false, func(ctx context.Context, in sketch.Input) (idem.Result, error) {
		a, err := ss.AddSeries(ctx, name, ts, in)
		return idem.Result{Added: a.Added, SeriesAdded: a}, err
	}, func(res idem.Result) any { return seriesAddDTO(res.SeriesAdded, ts) })
}

// seriesAddResponse answers a series add: the ids accepted, the levels
// whose buckets took them and, for an add older than some level keeps,
// a warning naming the levels it skipped.
type seriesAddResponse struct {
	Accepted int      `json:"accepted"`
	Levels   []string `json:"levels"`
	Warnings []string `json:"warnings"`
}

func seriesAddDTO(a series.Added, ts time.Time) seriesAddResponse {
	resp := seriesAddResponse{Accepted: a.Accepted, Levels: []string{}, Warnings: []string{}}
	for _, l := range a.Levels {
		resp.Levels = append(resp.Levels, l.String())
	}
	for _, ls := range a.Skipped {
		resp.Warnings = append(resp.Warnings, fmt.Sprintf("ts %s is older than the %s level keeps (%s): its %s bucket was not written; only %s took the ids", ts.UTC().Format(time.RFC3339), ls.Level, ls.Retention, ls.Level, strings.Join(resp.Levels, ", ")))
	}
	return resp
}

// handleSeriesChange changes a series' late limit and the retentions of
// the levels it keeps (PATCH): a body naming neither is a 400.
func (s *Server) handleSeriesChange(w http.ResponseWriter, r *http.Request) error {
	name, _, ss, err := s.seriesRoute(r)
	if err != nil {
		return err
	}
	var req seriesChangeRequest
	if err := s.decodeJSON(w, r, &req, false); err != nil {
		return err
	}
	c, err := req.change()
	if err != nil {
		return err
	}
	return s.commit(w, r, func(res idem.Result) (*answer, error) {
		return jsonAnswer(http.StatusOK, describeSeries(res.Series))
	}, func(ctx context.Context) (idem.Result, error) {
		info, err := ss.ChangeSeries(ctx, name, c)
		return idem.Result{Series: info}, err
	})
}

// seriesChangeRequest is the body of PATCH /v1/series/{name}.
type seriesChangeRequest struct {
	LateLimit *string           `json:"late_limit"`
	Levels    map[string]string `json:"levels"`
}

func (q seriesChangeRequest) change() (series.Change, error) {
	var c series.Change
	if q.LateLimit == nil && len(q.Levels) == 0 {
		return c, sketch.Errorf(sketch.Invalid, `name what to change: {"late_limit":"P90D"} and/or {"levels":{"hour":"P30D"}}`)
	}
	if q.LateLimit != nil {
		d, err := series.ParseField("late_limit", *q.LateLimit)
		if err != nil {
			return c, err
		}
		c.LateLimit = &d
	}
	for k, v := range q.Levels {
		l, err := series.ParseLevel(k)
		if err != nil {
			return c, sketch.Errorf(sketch.Invalid, "levels: %s", err)
		}
		d, err := series.ParseField("levels."+k, v)
		if err != nil {
			return c, err
		}
		if c.Retentions == nil {
			c.Retentions = map[series.Level]series.Duration{}
		}
		c.Retentions[l] = d
	}
	return c, nil
}

// budget is what one request may plan of series buckets and points.
func (s *Server) budget() *series.Budget {
	return series.NewBudget(s.cfg.MaxSeriesBuckets, s.cfg.MaxSeriesPoints)
}

// rangeUnion reads [from, to) of a series within b: the plan and the
// union of its stored buckets (an empty sketch of the series' parameters
// when none holds anything). With list, a plan of more buckets than an
// answer may list is refused before anything is read.
// rangeUnionOf is rangeUnion for a series read: within the request's
// budget, the plan listing every bucket when the query asks
// (?buckets=true), which it reports.
func (s *Server) rangeUnionOf(r *http.Request, q url.Values, ss SeriesStore, name string, from, to time.Time) (series.Plan, sketch.Sketch, bool, error) {
	list, err := boolParam(q, "buckets", false)
	if err != nil {
		return series.Plan{}, nil, false, err
	}
	plan, u, err := s.rangeUnion(r.Context(), ss, name, from, to, s.budget(), list)
	return plan, u, list, err
}

func (s *Server) rangeUnion(ctx context.Context, ss SeriesStore, name string, from, to time.Time, b *series.Budget, list bool) (series.Plan, sketch.Sketch, error) {
	var plan series.Plan
	var u sketch.Sketch
	start := *b // a plan made again (the series changed) spends the same
	err := ss.ViewSeries(ctx, name, func(spec *series.Spec) ([]series.Run, error) {
		*b = start
		var err error
		if plan, err = spec.PlanWithin(from, to, time.Now(), b); err != nil {
			return nil, err
		}
		if list && len(plan.Buckets) > s.cfg.MaxSeriesPoints {
			return nil, sketch.Errorf(sketch.Unprocessable, "buckets=true lists at most %d buckets (the server's -max-series-points) and this range is answered from %d: leave buckets out to get the plan as runs (level, first, last, count), or ask for a shorter range", s.cfg.MaxSeriesPoints, len(plan.Buckets))
		}
		return plan.Runs, nil
	}, func(spec *series.Spec, bs []series.Bucket) error {
		var err error
		u, err = unionOf(spec, bs)
		return err
	})
	return plan, u, err
}

// unionOf unions the buckets' sketches, or returns an empty one.
func unionOf(spec *series.Spec, bs []series.Bucket) (sketch.Sketch, error) {
	if len(bs) == 0 {
		return spec.Params.New()
	}
	some := make([]sketch.Sketch, len(bs))
	for i, b := range bs {
		some[i] = b.Sketch
	}
	return spec.Params.Kind().Union(some)
}

// rangeParams reads ?from= and ?to=.
func rangeParams(q map[string][]string) (from, to time.Time, err error) {
	if from, err = timeParam(q, "from", time.Time{}); err != nil {
		return
	}
	to, err = timeParam(q, "to", time.Time{})
	return
}

// handleSeriesCount answers the distinct count (HLL) or the total and
// ?id= frequencies (CMS) over [from, to).
func (s *Server) handleSeriesCount(w http.ResponseWriter, r *http.Request) error {
	name, q, from, to, ss, err := s.seriesRange(r, "id*", "id_type", "buckets", "estimator")
	if err != nil {
		return err
	}
	ids, err := queryIDs(q, false)
	if err != nil {
		return err
	}
	est, err := estimatorQuery(q)
	if err != nil {
		return err
	}
	plan, u, list, err := s.rangeUnionOf(r, q, ss, name, from, to)
	if err != nil {
		return err
	}
	resp := countResponse{rangeResponse: rangeDTO(plan, list)}
	if h, ok := sketch.HLLOf(u); ok {
		if len(ids) > 0 {
			return sketch.Errorf(sketch.Invalid, "id= asks for frequencies, which an hll series does not keep")
		}
		resp.estimateFields = answerFigures(h.Answer(est))
	} else if err := needsHLL("estimator", est, u); err != nil {
		return err
	} else if p, ok := u.Params().(sketch.KLLParams); ok {
		if len(ids) > 0 {
			return sketch.Errorf(sketch.Invalid, "id= asks for frequencies, which a kll series does not keep")
		}
		var in sketch.Info
		u.Describe(&in)
		st := kllStateOf(p, in)
		resp.KLL = &st
	} else if p, ok := u.Params().(sketch.BloomParams); ok {
		if len(ids) > 0 {
			return sketch.Errorf(sketch.Invalid, "id= asks for frequencies, which a bloom series does not keep; POST ids to /v1/series/%s/check", name)
		}
		var in sketch.Info
		u.Describe(&in)
		st := bloomStateOf(p, in)
		resp.Cardinality, resp.Bloom = &st.EstimatedItems, &st
	} else if c, ok := sketch.CMSOf(u); ok {
		total := c.Total()
		resp.Total = &total
		for _, id := range ids {
			resp.Results = append(resp.Results, frequencyResult{ID: idValue(id), Estimate: c.Estimate(id), ErrorBound: c.ErrorBound(), Confidence: c.Confidence()})
		}
	} else {
		if len(ids) > 0 {
			return sketch.Errorf(sketch.Invalid, "id= asks for frequencies, which a %s series does not keep", u.Kind().Type)
		}
		var in sketch.Info
		u.Describe(&in)
		resp.Cardinality, resp.Lower, resp.Upper = &in.Cardinality, &in.Lower, &in.Upper
		if in.StdError > 0 {
			resp.StdError = &in.StdError
		}
	}
	return writeJSON(w, http.StatusOK, resp)
}

// queryIDs reads repeated ?id= (integers unless id_type=text); required
// says whether at least one must be given.
func queryIDs(q map[string][]string, required bool) ([]cms.ID, error) {
	idType, hasType := first(q, "id_type")
	if hasType && idType != "int" && idType != "text" {
		return nil, sketch.Errorf(sketch.Invalid, "query parameter id_type=%q must be int or text", clip(idType))
	}
	raw := q["id"]
	if len(raw) == 0 && required {
		return nil, sketch.Errorf(sketch.Invalid, "give at least one ?id=")
	}
	if len(raw) > maxFrequencyIDs {
		return nil, sketch.Errorf(sketch.TooLarge, "%d ids; at most %d per frequency query", len(raw), maxFrequencyIDs)
	}
	ids := make([]cms.ID, len(raw))
	for i, v := range raw {
		if idType == "text" {
			ids[i] = cms.TextID(v)
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, sketch.Errorf(sketch.Invalid, "id=%q is not an int64; add id_type=text for text ids", clip(v))
		}
		ids[i] = cms.IntID(n)
	}
	return ids, nil
}

// handleSeriesTimeseries answers one point per step over [from, to), each
// the union over the trailing window that ends with its step.
func (s *Server) handleSeriesTimeseries(w http.ResponseWriter, r *http.Request) error {
	name, q, from, to, ss, err := s.seriesRange(r, "step", "window", "q", "estimator")
	if err != nil {
		return err
	}
	est, err := estimatorQuery(q)
	if err != nil {
		return err
	}
	var qs []float64
	if _, ok := first(q, "q"); ok {
		if qs, err = floatList(q, "q", 0, 1); err != nil {
			return err
		}
	}
	step, err := durationParam(q, "step", "P1D")
	if err != nil {
		return err
	}
	window, err := durationParam(q, "window", step.String())
	if err != nil {
		return err
	}
	var plan series.Timeseries
	resp := timeseriesResponse{Step: step.String(), Window: window.String()}
	b := s.budget()
	start := *b
	err = ss.ViewSeries(r.Context(), name, func(spec *series.Spec) ([]series.Run, error) {
		*b = start
		var err error
		if plan, err = spec.TimeseriesWithin(from, to, step, window, time.Now(), b); err != nil {
			return nil, err
		}
		return []series.Run{plan.Run()}, nil
	}, func(spec *series.Spec, bs []series.Bucket) error {
		sks, err := elementsOf(plan.Elements, bs)
		if err != nil {
			return err
		}
		resp.Points = make([]timeseriesPoint, len(plan.Points))
		if _, ok := spec.Params.(sketch.HLLParams); !ok && est != hll.PostgreSQLEstimator {
			return sketch.Errorf(sketch.Invalid, "estimator=%s applies to hll series; this is a %s series", est, spec.Params.Kind().Type)
		}
		if qs != nil {
			// Quantile lines need a kind that answers quantiles.
			if err := quantileKind("series "+strconv.Quote(name), spec.Params); err != nil {
				return err
			}
		} else if registerLine(plan.Points, sks, spec, resp.Points, est) {
			return nil
		}
		var mergeErr error
		win := series.NewWindow(func(a, b sketch.Sketch) sketch.Sketch {
			u, err := unionPair(a, b)
			if err != nil && mergeErr == nil {
				mergeErr = err
			}
			return u
		})
		in, out := 0, 0 // elements pushed and popped so far
		for i, p := range plan.Points {
			for ; in < p.Last; in++ {
				win.Push(sks[in])
			}
			for ; out < p.First; out++ {
				win.Pop()
			}
			v := win.Value()
			if v == nil {
				var err error
				if v, err = spec.Params.New(); err != nil {
					return err
				}
			}
			resp.Points[i] = pointDTO(p, v, spec.Location(), est)
			if qs != nil {
				qr, err := quantilesOf("series "+strconv.Quote(name), v, qs, true)
				if err != nil {
					return err
				}
				resp.Points[i].Quantiles, resp.Points[i].RankError = qr.Quantiles, &qr.RankError
			}
		}
		return mergeErr
	})
	if err != nil {
		return err
	}
	resp.Level = plan.Level.String()
	resp.Warnings = append([]string{}, plan.Warnings...)
	return writeJSON(w, http.StatusOK, resp)
}

// elementsOf lays the stored buckets (in time order) out on a line's
// elements: nil where none is stored. A bucket whose start is no
// element's (one stored under other edges) joins the element holding its
// start, so no stored data inside the line is left out.
func elementsOf(els []series.Key, bs []series.Bucket) ([]sketch.Sketch, error) {
	sks := make([]sketch.Sketch, len(els))
	j := 0
	for _, b := range bs {
		for j+1 < len(els) && !els[j+1].Start.After(b.Start) {
			j++
		}
		if len(els) == 0 || b.Start.Before(els[j].Start) {
			continue // before the line (the store read only inside it)
		}
		if sks[j] == nil {
			sks[j] = b.Sketch
			continue
		}
		u, err := unionPair(sks[j], b.Sketch)
		if err != nil {
			return nil, err
		}
		sks[j] = u
	}
	return sks, nil
}

// pointBase is a point's range, without its number.
func pointBase(p series.Point, loc *time.Location) timeseriesPoint {
	return timeseriesPoint{Start: zoned(p.Start, loc), End: zoned(p.End, loc), WindowFrom: zoned(p.WindowFrom, loc)}
}

// zoned is t in loc, as answers write it: RFC 3339 offsets are whole
// minutes, so where loc's offset has seconds (Monrovia's -00:44:30 until
// 1972, local mean times before 1900) t is written in UTC rather than
// half a minute off.
func zoned(t time.Time, loc *time.Location) time.Time {
	t = t.In(loc)
	if _, off := t.Zone(); off%60 != 0 {
		return t.UTC()
	}
	return t
}

// maxLineRegisters bounds the register arrays one rolling line lays out
// (a year of daily log2m=14 buckets takes 6 MiB).
const maxLineRegisters = 64 << 20

// registerLine fills in the points of a line over HLL buckets that all
// hold registers (SPARSE or FULL; nil for an empty bucket), sliding a
// window over their bare register arrays: a merge is a bytewise maximum
// and a point's number is read off the two halves of the window without
// building their union. The numbers are those of the union of each
// point's buckets. It reports false, filling in nothing, for any other
// buckets (an EXPLICIT one could make a window's union exact); the
// caller then unions sketches. So it does when the arrays would take more
// than maxLineRegisters bytes.
func registerLine(points []series.Point, sks []sketch.Sketch, spec *series.Spec, out []timeseriesPoint, est hll.Estimator) bool {
	hp, ok := spec.Params.(sketch.HLLParams)
	if !ok {
		return false
	}
	m := hp.NumRegisters()
	regs := make([][]uint8, len(sks))
	var n int
	for _, sk := range sks {
		if sk != nil {
			n++
		}
	}
	if n*m > maxLineRegisters {
		return false // sparse buckets would grow too much as arrays
	}
	backing := make([]uint8, n*m)
	for i, sk := range sks {
		if sk == nil {
			continue
		}
		h, ok := sketch.HLLOf(sk)
		if !ok || h.Params() != hp.Params {
			return false
		}
		if rep := h.Representation(); rep != hll.Sparse && rep != hll.Full {
			return false
		}
		regs[i], backing = h.Registers(backing[:0:m]), backing[m:]
	}
	union := func(a, b []uint8) []uint8 {
		switch {
		case a == nil:
			return b
		case b == nil:
			return a
		}
		u := slices.Clone(a)
		hll.MaxRegisters(u, b)
		return u
	}
	win := series.NewWindow(union).MergeInto(func(dst []uint8, own bool, src []uint8) ([]uint8, bool) {
		switch {
		case src == nil:
			return dst, own
		case dst == nil:
			return src, false // a bucket's registers: not the window's to change
		case !own:
			dst = slices.Clone(dst)
		}
		hll.MaxRegisters(dst, src)
		return dst, true
	})
	loc := spec.Location()
	in, gone := 0, 0 // elements pushed and popped so far
	for i, p := range points {
		for ; in < p.Last; in++ {
			win.Push(regs[in])
		}
		for ; gone < p.First; gone++ {
			win.Pop()
		}
		out[i] = pointBase(p, loc)
		a, b := win.Parts()
		if a == nil {
			a, b = b, nil
		}
		if a == nil {
			// No bucket of this window holds anything: an EMPTY sketch's
			// number, exact.
			out[i].estimateFields = answerFigures(hll.Answer{Estimator: est})
			continue
		}
		out[i].estimateFields = answerFigures(hll.RegisterAnswer(hp.Params, a, b, est))
	}
	return true
}

// unionPair is the sliding window's union: a new sketch unless one side
// is empty (nil), never changing either. Buckets of one series share
// their parameters, so the merge does not fail in practice.
func unionPair(a, b sketch.Sketch) (sketch.Sketch, error) {
	switch {
	case a == nil:
		return b, nil
	case b == nil:
		return a, nil
	}
	c := a.Clone()
	return c, c.Merge(b)
}

// handleSeriesTop lists a Count-Min series' heavy hitters over a range.
func (s *Server) handleSeriesTop(w http.ResponseWriter, r *http.Request) error {
	name, q, from, to, ss, err := s.seriesRange(r, "k", "buckets")
	if err != nil {
		return err
	}
	k, err := intParam(q, "k", 0, 1, cms.MaxTopK)
	if err != nil {
		return err
	}
	plan, u, list, err := s.rangeUnionOf(r, q, ss, name, from, to)
	if err != nil {
		return err
	}
	c, ok := sketch.CMSOf(u)
	if !ok {
		return sketch.Errorf(sketch.Conflict, "series %q is a %s series; heavy hitters need a cms series", name, u.Kind().Type)
	}
	if c.Params().TopK == 0 {
		return sketch.Errorf(sketch.Conflict, "series %q keeps no heavy hitters; create it with topk > 0", name)
	}
	resp := seriesTopResponse{rangeResponse: rangeDTO(plan, list), Items: []topItem{}}
	for _, it := range c.Top(k) {
		resp.Items = append(resp.Items, topItem{ID: idValue(it.ID), Estimate: it.Count})
	}
	return writeJSON(w, http.StatusOK, resp)
}

// handleSeriesRaw downloads a range's union in its kind's format, the
// covered range in headers.
func (s *Server) handleSeriesRaw(w http.ResponseWriter, r *http.Request) error {
	name, q, from, to, ss, err := s.seriesRange(r, "format", "layout", "compressed")
	if err != nil {
		return err
	}
	format, err := rawFormat(q)
	if err != nil {
		return err
	}
	dl, err := downloadParams(q)
	if err != nil {
		return err
	}
	plan, u, err := s.rangeUnion(r.Context(), ss, name, from, to, s.budget(), false)
	if err != nil {
		return err
	}
	b, err := sketch.AppendDownload(nil, u, dl)
	if err != nil {
		return err
	}
	w.Header().Set("Sketchd-From", zoned(plan.From, plan.From.Location()).Format(time.RFC3339))
	w.Header().Set("Sketchd-To", zoned(plan.To, plan.To.Location()).Format(time.RFC3339))
	w.Header().Set("Sketchd-Buckets", strconv.Itoa(len(plan.Buckets)))
	if len(plan.Runs) > 0 {
		w.Header().Set("Sketchd-Plan", planHeader(plan))
	}
	writeRaw(w, b, format == "hex")
	return nil
}

// planHeader describes a plan's runs in one header value: "level first
// last count" per run, in time order, joined by ", ".
func planHeader(p series.Plan) string {
	var b strings.Builder
	loc := p.From.Location()
	for i, r := range p.Runs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s %s %d", r.Level, r.First.In(loc).Format(time.RFC3339), r.Last.In(loc).Format(time.RFC3339), r.Count)
	}
	return b.String()
}

// seriesRequest is the body of PUT /v1/series/{name}: the sketch
// parameters of a sketch create (no metric flag), the zone, the levels
// with their retentions and the late limit.
type seriesRequest struct {
	createRequest
	TZ        *string           `json:"tz"`
	Levels    map[string]string `json:"levels"`
	LateLimit *string           `json:"late_limit"`
}

func (q seriesRequest) spec() (*series.Spec, error) {
	if q.Metric != nil {
		return nil, sketch.Errorf(sketch.Invalid, "metric applies to sketches; a series exports nothing on /metrics")
	}
	if q.ExpireAfter != nil || q.ExpireAt != nil {
		return nil, sketch.Errorf(sketch.Invalid, "expire_after and expire_at apply to sketches; a series keeps each level's buckets for that level's retention (levels)")
	}
	sp, err := q.createRequest.spec()
	if err != nil {
		return nil, err
	}
	spec := &series.Spec{Params: sp.Params, TZ: "UTC"}
	if q.TZ != nil {
		spec.TZ = *q.TZ
	}
	if len(q.Levels) == 0 {
		return nil, sketch.Errorf(sketch.Invalid, `levels is required, like {"hour":"P14D","day":"P400D","month":"P5Y"}`)
	}
	for k, v := range q.Levels {
		l, err := series.ParseLevel(k)
		if err != nil {
			return nil, sketch.Errorf(sketch.Invalid, "levels: %s", err)
		}
		d, err := series.ParseField("levels."+k, v)
		if err != nil {
			return nil, err
		}
		spec.Levels = append(spec.Levels, series.LevelSpec{Level: l, Retention: d})
	}
	if q.LateLimit != nil {
		d, err := series.ParseField("late_limit", *q.LateLimit)
		if err != nil {
			return nil, err
		}
		spec.LateLimit = d
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return spec, nil
}

type seriesLevel struct {
	Level     string     `json:"level"`
	Retention string     `json:"retention"`
	Buckets   int        `json:"buckets"`
	Oldest    *time.Time `json:"oldest,omitempty"`
	Newest    *time.Time `json:"newest,omitempty"`
	Bytes     int64      `json:"bytes"`
}

type seriesResponse struct {
	Name      string         `json:"name"`
	Type      string         `json:"type"`
	Params    map[string]any `json:"params"`
	TZ        string         `json:"tz"`
	LateLimit string         `json:"late_limit"`
	Levels    []seriesLevel  `json:"levels"`
	SizeBytes int64          `json:"size_bytes"`
	CreatedAt time.Time      `json:"created_at"`
}

type seriesListResponse struct {
	Series []seriesResponse `json:"series"`
	Next   string           `json:"next,omitempty"`
}

func describeSeries(in series.Info) seriesResponse {
	resp := seriesResponse{
		Name: in.Name, Type: string(in.Spec.Params.Kind().Type), Params: paramsDTO(in.Spec.Params),
		TZ: in.Spec.TZ, LateLimit: in.Spec.LateLimit.String(), Levels: []seriesLevel{}, CreatedAt: in.CreatedAt,
	}
	for _, l := range in.Levels {
		sl := seriesLevel{Level: l.Level.String(), Retention: l.Retention.String(), Buckets: l.Buckets, Bytes: l.Bytes}
		if l.Buckets > 0 {
			o, n := zoned(l.Oldest, l.Oldest.Location()), zoned(l.Newest, l.Newest.Location())
			sl.Oldest, sl.Newest = &o, &n
		}
		resp.SizeBytes += l.Bytes
		resp.Levels = append(resp.Levels, sl)
	}
	return resp
}

// paramsDTO lists a kind's creation parameters as a create body names
// them.
func paramsDTO(p sketch.Params) map[string]any {
	switch p := p.(type) {
	case sketch.HLLParams:
		return map[string]any{"log2m": p.Log2m, "regwidth": p.Regwidth, "expthresh": p.Expthresh, "sparse": p.Sparse}
	case sketch.CMSParams:
		m := map[string]any{"width": p.Width, "depth": p.Depth, "epsilon": p.Epsilon(), "delta": p.Delta(), "conservative": p.Conservative, "topk": p.TopK}
		if p.DomainBits > 0 {
			m["domain_bits"] = p.DomainBits
		}
		return m
	case sketch.ThetaParams:
		return map[string]any{"lg_k": p.LgK}
	case sketch.FreqParams:
		return map[string]any{"lg_k": p.LgK}
	case sketch.DSHLLParams:
		return map[string]any{"lg_k": p.LgK, "tgt_type": p.Type.String()}
	case sketch.CPCParams:
		return map[string]any{"lg_k": p.LgK}
	case sketch.BloomParams:
		m := map[string]any{"bits": p.Bits, "hashes": p.Hashes}
		if p.Stated() {
			m["expected_items"], m["fpp"] = p.ExpectedItems, p.FPP
		}
		return m
	case sketch.KLLParams:
		return map[string]any{"k": p.K, "items": p.Items.String()}
	case sketch.ZetaParams:
		return map[string]any{"precision": p.Precision, "sparse_precision": p.SparsePrecision}
	case sketch.AirliftParams:
		return map[string]any{"index_bits": p.IndexBits}
	}
	return map[string]any{}
}

type bucketRef struct {
	Level string    `json:"level"`
	Start time.Time `json:"start"`
}

// planRun is Count consecutive buckets of one level, from the one
// starting at First to the one starting at Last.
type planRun struct {
	Level string    `json:"level"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	Count int       `json:"count"`
}

// rangeResponse echoes the range an answer covers and the plan it was
// taken from: runs of buckets, and every bucket when asked
// (?buckets=true).
type rangeResponse struct {
	From     time.Time    `json:"from"`
	To       time.Time    `json:"to"`
	Plan     []planRun    `json:"plan"`
	Buckets  *[]bucketRef `json:"buckets,omitempty"`
	Warnings []string     `json:"warnings"`
}

func rangeDTO(p series.Plan, list bool) rangeResponse {
	loc := p.From.Location()
	r := rangeResponse{From: zoned(p.From, loc), To: zoned(p.To, loc), Plan: make([]planRun, len(p.Runs)), Warnings: append([]string{}, p.Warnings...)}
	for i, run := range p.Runs {
		r.Plan[i] = planRun{Level: run.Level.String(), First: zoned(run.First, loc), Last: zoned(run.Last, loc), Count: run.Count}
	}
	if list {
		bs := make([]bucketRef, len(p.Buckets))
		for i, k := range p.Buckets {
			bs[i] = bucketRef{Level: k.Level.String(), Start: zoned(k.Start, loc)}
		}
		r.Buckets = &bs
	}
	return r
}

// estimateFields are a count's estimate, its relative standard error
// and bounds, and for an hll the estimator behind them.
type estimateFields struct {
	Cardinality *float64 `json:"cardinality,omitempty"`
	StdError    *float64 `json:"std_error,omitempty"`
	Lower       *float64 `json:"lower_bound,omitempty"`
	Upper       *float64 `json:"upper_bound,omitempty"`
	Estimator   *string  `json:"estimator,omitempty"`
}

// answerFigures renders an hll answer.
func answerFigures(a hll.Answer) estimateFields {
	c, e, lo, hi, name := finite(a.Estimate), finite(a.StdError), finite(a.LowerBound), finite(a.UpperBound), a.Estimator.String()
	return estimateFields{Cardinality: &c, StdError: &e, Lower: &lo, Upper: &hi, Estimator: &name}
}

type countResponse struct {
	rangeResponse
	// Bloom describes the union of a Bloom series' buckets, KLL of a KLL
	// series'.
	Bloom *bloomState `json:"bloom,omitempty"`
	KLL   *kllState   `json:"kll,omitempty"`
	estimateFields
	Total   *uint64           `json:"total,omitempty"`
	Results []frequencyResult `json:"results,omitempty"`
}

type seriesTopResponse struct {
	rangeResponse
	Items []topItem `json:"items"`
}

type timeseriesPoint struct {
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	WindowFrom time.Time `json:"window_from"`
	estimateFields
	Total *uint64 `json:"total,omitempty"`
	// FalsePositiveRate is a Bloom series point's: the rate of its
	// window's union, whose cardinality is its estimated items.
	FalsePositiveRate *float64 `json:"false_positive_rate,omitempty"`
	// Quantiles (with ?q=) are the window's values at those fractions,
	// each within RankError of its rank (kll, or cms over a domain).
	Quantiles []quantileValue `json:"quantiles,omitempty"`
	RankError *float64        `json:"rank_error,omitempty"`
}

type timeseriesResponse struct {
	Step     string            `json:"step"`
	Window   string            `json:"window"`
	Level    string            `json:"level"`
	Points   []timeseriesPoint `json:"points"`
	Warnings []string          `json:"warnings"`
}

func pointDTO(p series.Point, v sketch.Sketch, loc *time.Location, est hll.Estimator) timeseriesPoint {
	out := pointBase(p, loc)
	if h, ok := sketch.HLLOf(v); ok {
		out.estimateFields = answerFigures(h.Answer(est))
	} else if c, ok := sketch.CMSOf(v); ok {
		t := c.Total()
		out.Total = &t
	} else if f, ok := sketch.BloomOf(v); ok {
		n, r := finite(f.EstimatedItems()), finite(f.Rate())
		out.Cardinality, out.FalsePositiveRate = &n, &r
	} else if q, ok := sketch.KLLOf(v); ok {
		n := q.N()
		out.Total = &n
	} else {
		var in sketch.Info
		v.Describe(&in)
		out.Cardinality, out.Lower, out.Upper = &in.Cardinality, &in.Lower, &in.Upper
		if in.StdError > 0 {
			out.StdError = &in.StdError
		}
	}
	return out
}

// handleSeriesFrequencyReport answers the frequency report of a freq
// series over [from, to): the union of its buckets sums each retained
// user's counts.
func (s *Server) handleSeriesFrequencyReport(w http.ResponseWriter, r *http.Request) error {
	name, q, from, to, ss, err := s.seriesRange(r, "max", "sd", "buckets")
	if err != nil {
		return err
	}
	maxClass, err := intParam(q, "max", 10, 2, freq.MaxClasses)
	if err != nil {
		return err
	}
	sd, err := intParam(q, "sd", 2, 1, 3)
	if err != nil {
		return err
	}
	plan, u, list, err := s.rangeUnionOf(r, q, ss, name, from, to)
	if err != nil {
		return err
	}
	f, ok := sketch.FreqOf(u)
	if !ok {
		return sketch.Errorf(sketch.Conflict, "series %q is a %s series; the frequency report needs a freq series", name, u.Kind().Type)
	}
	rep, err := f.FrequencyReport(maxClass, sd)
	if err != nil {
		return sketch.Wrap(sketch.Invalid, err, strings.TrimPrefix(err.Error(), "freq: "))
	}
	return writeJSON(w, http.StatusOK, seriesReportResponse{rangeResponse: rangeDTO(plan, list), frequencyReportResponse: frequencyReportDTO(rep)})
}

// handleSeriesCheck answers, for each id of a body, whether a Bloom
// series may have seen it in [from, to): a daily filter answers "seen
// today?", a range of them "seen this week?".
func (s *Server) handleSeriesCheck(w http.ResponseWriter, r *http.Request) error {
	name, q, from, to, ss, err := s.seriesRange(r, "id_type", "buckets")
	if err != nil {
		return err
	}
	list, err := boolParam(q, "buckets", false)
	if err != nil {
		return err
	}
	in, done, err := s.idBody(w, r, q)
	if err != nil {
		return err
	}
	defer done()
	plan, u, err := s.rangeUnion(r.Context(), ss, name, from, to, s.budget(), list)
	if err != nil {
		return err
	}
	f, ok := sketch.BloomOf(u)
	if !ok {
		return sketch.Errorf(sketch.Conflict, "series %q is a %s series; a membership check needs a bloom series", name, u.Kind().Type)
	}
	resp, err := check(f, in)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, seriesCheckResponse{rangeResponse: rangeDTO(plan, list), checkResponse: resp})
}

type seriesCheckResponse struct {
	rangeResponse
	checkResponse
}

type seriesReportResponse struct {
	rangeResponse
	frequencyReportResponse
}

// seriesRange reads what every series range route starts with: the name,
// the query (from, to and the route's own keys), the range, and the
// backend's series part.
func (s *Server) seriesRange(r *http.Request, keys ...string) (name string, q map[string][]string, from, to time.Time, ss SeriesStore, err error) {
	if name, q, ss, err = s.seriesRoute(r, append([]string{"from", "to"}, keys...)...); err != nil {
		return
	}
	from, to, err = rangeParams(q)
	return
}

// seriesRoute reads what every series route starts with: the name, the
// query (only keys allowed), and the backend's series part.
func (s *Server) seriesRoute(r *http.Request, keys ...string) (name string, q map[string][]string, ss SeriesStore, err error) {
	if name, err = nameParam(r); err != nil {
		return
	}
	if q, err = query(r, keys...); err != nil {
		return
	}
	ss, err = s.seriesStore()
	return
}
