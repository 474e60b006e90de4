package server

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/sketch"
)

// maxSplitPoints bounds the quantiles, values and split points one query
// asks for.
const maxSplitPoints = 1000

// floatList parses a comma-separated list of numbers (?q=0.5,0.99),
// required, at most maxSplitPoints, each finite and within [lo, hi].
func floatList(q map[string][]string, key string, lo, hi float64) ([]float64, error) {
	v, ok := first(q, key)
	if !ok || v == "" {
		return nil, sketch.Errorf(sketch.Invalid, "query parameter %s is required: a comma-separated list of numbers, like %s=0.5,0.99", key, key)
	}
	parts := strings.Split(v, ",")
	if len(parts) > maxSplitPoints {
		return nil, sketch.Errorf(sketch.Invalid, "query parameter %s lists %d numbers; at most %d", key, len(parts), maxSplitPoints)
	}
	out := make([]float64, len(parts))
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < lo || f > hi {
			return nil, sketch.Errorf(sketch.Invalid, "query parameter %s: %q is not a number in [%v, %v]", key, clip(p), lo, hi)
		}
		out[i] = f
	}
	return out, nil
}

// uintParam parses a required non-negative integer query parameter.
func uintParam(q map[string][]string, key string) (uint64, error) {
	v, ok := first(q, key)
	if !ok {
		return 0, sketch.Errorf(sketch.Invalid, "query parameter %s is required", key)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, sketch.Errorf(sketch.Invalid, "query parameter %s=%q is not a non-negative integer", key, clip(v))
	}
	return n, nil
}

// quantileValue is one quantile of a sketch's values with the values at
// the ranks rank_error below and above it (nil for an empty sketch).
type quantileValue struct {
	Q     float64  `json:"q"`
	Value *float64 `json:"value"`
	Lower *float64 `json:"lower"`
	Upper *float64 `json:"upper"`
}

// quantileResponse answers quantiles of a Count-Min over a value domain
// or a KLL sketch: each value's rank is within rank_error·n of q·n with
// probability confidence.
type quantileResponse struct {
	Type       string          `json:"type"`
	N          uint64          `json:"n"`
	RankError  float64         `json:"rank_error"`
	Confidence float64         `json:"confidence"`
	Quantiles  []quantileValue `json:"quantiles"`
}

// quantiles answers qs from sk.
func quantiles(label string, sk sketch.Sketch, qs []float64) (quantileResponse, error) {
	c, ok := sketch.CMSOf(sk)
	if !ok {
		return quantileResponse{}, sketch.Errorf(sketch.Conflict, "%s is a %s sketch; quantiles need a cms sketch with domain_bits", label, sk.Kind().Type)
	}
	if c.DomainBits() == 0 {
		return quantileResponse{}, sketch.Errorf(sketch.Conflict, "%s counts ids, not values: quantiles need a cms sketch created with domain_bits", label)
	}
	resp := quantileResponse{Type: string(sketch.TypeCMS), N: c.Total(), Quantiles: make([]quantileValue, len(qs))}
	at := func(q float64) (*float64, cms.QuantileEstimate, error) {
		e, ok, err := c.Quantile(q)
		if err != nil || !ok {
			return nil, e, err
		}
		v := float64(e.Value)
		return &v, e, nil
	}
	for i, q := range qs {
		v, e, err := at(q)
		if err != nil {
			return resp, sketch.Wrap(sketch.Invalid, err, strings.TrimPrefix(err.Error(), "cms: "))
		}
		resp.RankError, resp.Confidence = e.RankError, e.Confidence
		lo, _, _ := at(math.Max(0, q-e.RankError))
		hi, _, _ := at(math.Min(1, q+e.RankError))
		resp.Quantiles[i] = quantileValue{Q: q, Value: v, Lower: lo, Upper: hi}
	}
	return resp, nil
}

// rangeCount answers a range count [lo, hi] of a Count-Min over a value
// domain.
func rangeCount(label string, sk sketch.Sketch, lo, hi uint64) (rangeCountResponse, error) {
	c, ok := sketch.CMSOf(sk)
	if !ok {
		return rangeCountResponse{}, sketch.Errorf(sketch.Conflict, "%s is a %s sketch; range counts need a cms sketch with domain_bits", label, sk.Kind().Type)
	}
	if c.DomainBits() == 0 {
		return rangeCountResponse{}, sketch.Errorf(sketch.Conflict, "%s counts ids, not values: range counts need a cms sketch created with domain_bits", label)
	}
	r, err := c.Range(lo, hi)
	if errors.Is(err, cms.ErrParams) {
		return rangeCountResponse{}, sketch.Wrap(sketch.Invalid, err, strings.TrimPrefix(err.Error(), "cms: "))
	}
	if err != nil {
		return rangeCountResponse{}, err
	}
	return rangeCountResponse{Lo: lo, Hi: hi, Estimate: r.Estimate, ErrorBound: r.ErrorBound, Confidence: r.Confidence,
		Intervals: r.Intervals, Total: c.Total()}, nil
}

// viewOne runs fn on the sketch name, unchanged while it runs.
func (s *Server) viewOne(ctx context.Context, name string, fn func(sketch.Sketch) error) error {
	return s.store.View(ctx, []string{name}, func(sks []sketch.Sketch) error { return fn(sks[0]) })
}

// handleQuantile answers ?q= quantiles of a Count-Min over a value domain
// or a KLL sketch.
func (s *Server) handleQuantile(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	q, err := query(r, "q")
	if err != nil {
		return err
	}
	qs, err := floatList(q, "q", 0, 1)
	if err != nil {
		return err
	}
	var resp quantileResponse
	err = s.viewOne(r.Context(), name, func(sk sketch.Sketch) error {
		resp, err = quantiles(strconv.Quote(name), sk, qs)
		return err
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, resp)
}

// handleRange answers the count of values in [lo, hi] of a Count-Min
// over a value domain.
func (s *Server) handleRange(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	q, err := query(r, "lo", "hi")
	if err != nil {
		return err
	}
	lo, hi, err := loHi(q)
	if err != nil {
		return err
	}
	var resp rangeCountResponse
	err = s.viewOne(r.Context(), name, func(sk sketch.Sketch) error {
		resp, err = rangeCount(strconv.Quote(name), sk, lo, hi)
		return err
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, resp)
}

func loHi(q map[string][]string) (lo, hi uint64, err error) {
	if lo, err = uintParam(q, "lo"); err != nil {
		return
	}
	if hi, err = uintParam(q, "hi"); err != nil {
		return
	}
	if lo > hi {
		err = sketch.Errorf(sketch.Invalid, "lo=%d is above hi=%d", lo, hi)
	}
	return
}

// seriesQuantileResponse is quantiles over a series range.
type seriesQuantileResponse struct {
	rangeResponse
	quantileResponse
}

// seriesRangeCountResponse is a range count over a series range.
type seriesRangeCountResponse struct {
	rangeResponse
	rangeCountResponse
}

func (s *Server) handleSeriesQuantile(w http.ResponseWriter, r *http.Request) error {
	name, q, from, to, ss, err := s.seriesRange(r, "q")
	if err != nil {
		return err
	}
	qs, err := floatList(q, "q", 0, 1)
	if err != nil {
		return err
	}
	plan, u, err := s.rangeUnion(r.Context(), ss, name, from, to)
	if err != nil {
		return err
	}
	resp, err := quantiles("series "+strconv.Quote(name), u, qs)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, seriesQuantileResponse{rangeResponse: rangeDTO(plan), quantileResponse: resp})
}

func (s *Server) handleSeriesRangeCount(w http.ResponseWriter, r *http.Request) error {
	name, q, from, to, ss, err := s.seriesRange(r, "lo", "hi")
	if err != nil {
		return err
	}
	lo, hi, err := loHi(q)
	if err != nil {
		return err
	}
	plan, u, err := s.rangeUnion(r.Context(), ss, name, from, to)
	if err != nil {
		return err
	}
	resp, err := rangeCount("series "+strconv.Quote(name), u, lo, hi)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, seriesRangeCountResponse{rangeResponse: rangeDTO(plan), rangeCountResponse: resp})
}
