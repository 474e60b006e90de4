package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/kll"
	"github.com/sketchd/sketchd/internal/sketch"
)

// maxSplitPoints bounds the quantiles, values and split points one query
// asks for.
const maxSplitPoints = 1000

// numberList reads a comma-separated list of numbers (?q=0.5,0.99):
// required, at most maxSplitPoints, each finite and within [lo, hi]. It
// returns the numbers as floats and as they were written (trimmed), for a
// sketch of longs to read as integers (kllValues).
func numberList(q map[string][]string, key string, lo, hi float64) ([]float64, []string, error) {
	v, ok := first(q, key)
	if !ok || v == "" {
		return nil, nil, sketch.Errorf(sketch.Invalid, "query parameter %s is required: a comma-separated list of numbers, like %s=0.5,0.99", key, key)
	}
	parts := strings.Split(v, ",")
	if len(parts) > maxSplitPoints {
		return nil, nil, sketch.Errorf(sketch.Invalid, "query parameter %s lists %d numbers; at most %d", key, len(parts), maxSplitPoints)
	}
	out := make([]float64, len(parts))
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
		f, err := strconv.ParseFloat(parts[i], 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < lo || f > hi {
			return nil, nil, sketch.Errorf(sketch.Invalid, "query parameter %s: %q is not a number in [%v, %v]", key, clip(p), lo, hi)
		}
		out[i] = f
	}
	return out, parts, nil
}

// floatList is numberList's floats.
func floatList(q map[string][]string, key string, lo, hi float64) ([]float64, error) {
	fs, _, err := numberList(q, key, lo, hi)
	return fs, err
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
// the ranks rank_error below and above it (nil for an empty sketch); a
// long is its exact integer.
type quantileValue struct {
	Q     float64 `json:"q"`
	Value *number `json:"value"`
	Lower *number `json:"lower"`
	Upper *number `json:"upper"`
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

// kllConfidence is the confidence of a KLL sketch's rank error:
// DataSketches fits it to the 99th percentile of the error.
const kllConfidence = 0.99

// quantileKind is nil for the parameters of a kind that answers quantiles
// (kll, and cms over a value domain) and for any other the Conflict that
// says why: a series' quantile lines are refused from its parameters,
// before anything is read.
func quantileKind(label string, p sketch.Params) error {
	switch p := p.(type) {
	case sketch.KLLParams:
		return nil
	case sketch.CMSParams:
		if p.DomainBits > 0 {
			return nil
		}
		return sketch.Errorf(sketch.Conflict, "%s counts ids, not values: quantiles need a cms sketch created with domain_bits", label)
	}
	return sketch.Errorf(sketch.Conflict, "%s is a %s sketch; quantiles need a kll sketch, or a cms sketch with domain_bits", label, p.Kind().Type)
}

// quantilesOf answers qs from a KLL sketch or a Count-Min over a value
// domain; inclusive applies to KLL (the smallest value whose rank reaches
// q, or exceeds it).
func quantilesOf(label string, sk sketch.Sketch, qs []float64, inclusive bool) (quantileResponse, error) {
	if k, ok := sketch.KLLOf(sk); ok {
		resp := quantileResponse{Type: string(sketch.TypeKLL), N: k.N(), RankError: k.RankError(false), Confidence: kllConfidence,
			Quantiles: make([]quantileValue, len(qs))}
		v := k.View()
		at := func(q float64) *number {
			if k.IsEmpty() {
				return nil
			}
			x, err := v.Quantile(q, inclusive)
			if err != nil {
				return nil
			}
			n := number(x)
			return &n
		}
		for i, q := range qs {
			resp.Quantiles[i] = quantileValue{Q: q, Value: at(q), Lower: at(math.Max(0, q-resp.RankError)), Upper: at(math.Min(1, q+resp.RankError))}
		}
		return resp, nil
	}
	c, ok := sketch.CMSOf(sk)
	if !ok || c.DomainBits() == 0 {
		return quantileResponse{}, quantileKind(label, sk.Params())
	}
	resp := quantileResponse{Type: string(sketch.TypeCMS), N: c.Total(), Quantiles: make([]quantileValue, len(qs))}
	at := func(q float64) (*number, cms.QuantileEstimate, error) {
		e, ok, err := c.Quantile(q)
		if err != nil || !ok {
			return nil, e, err
		}
		// A value of the domain [0, 2^B), B ≤ 63: an exact integer.
		v := number(sketch.Long(int64(e.Value)))
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

// answerOne answers 200 with what fn makes of the sketch name, read
// unchanged while fn runs.
func answerOne[T any](s *Server, w http.ResponseWriter, r *http.Request, name string, fn func(sketch.Sketch) (T, error)) error {
	var resp T
	err := s.viewOne(r.Context(), name, func(sk sketch.Sketch) (err error) {
		resp, err = fn(sk)
		return err
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, resp)
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
	q, err := query(r, "q", "inclusive")
	if err != nil {
		return err
	}
	qs, inclusive, err := numbersInclusive(q, "q", 0, 1)
	if err != nil {
		return err
	}
	return answerOne(s, w, r, name, func(sk sketch.Sketch) (quantileResponse, error) {
		return quantilesOf(strconv.Quote(name), sk, qs, inclusive)
	})
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
	return answerOne(s, w, r, name, func(sk sketch.Sketch) (rangeCountResponse, error) {
		return rangeCount(strconv.Quote(name), sk, lo, hi)
	})
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
	name, q, from, to, ss, err := s.seriesRange(r, "q", "inclusive", "buckets")
	if err != nil {
		return err
	}
	qs, inclusive, err := numbersInclusive(q, "q", 0, 1)
	if err != nil {
		return err
	}
	plan, u, list, err := s.rangeUnionOf(r, q, ss, name, from, to)
	if err != nil {
		return err
	}
	resp, err := quantilesOf("series "+strconv.Quote(name), u, qs, inclusive)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, seriesQuantileResponse{rangeResponse: rangeDTO(plan, list), quantileResponse: resp})
}

func (s *Server) handleSeriesRangeCount(w http.ResponseWriter, r *http.Request) error {
	name, q, from, to, ss, err := s.seriesRange(r, "lo", "hi", "buckets")
	if err != nil {
		return err
	}
	lo, hi, err := loHi(q)
	if err != nil {
		return err
	}
	plan, u, list, err := s.rangeUnionOf(r, q, ss, name, from, to)
	if err != nil {
		return err
	}
	resp, err := rangeCount("series "+strconv.Quote(name), u, lo, hi)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, seriesRangeCountResponse{rangeResponse: rangeDTO(plan, list), rangeCountResponse: resp})
}

// rankValue is one value's normalized rank with the ranks rank_error
// below and above it (clipped to [0, 1]).
type rankValue struct {
	Value number  `json:"value"`
	Rank  float64 `json:"rank"`
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
}

// rankResponse answers ranks of values of a KLL sketch.
type rankResponse struct {
	Type       string      `json:"type"`
	N          uint64      `json:"n"`
	RankError  float64     `json:"rank_error"`
	Confidence float64     `json:"confidence"`
	Ranks      []rankValue `json:"ranks"`
}

// distributionResponse is a KLL sketch's CDF or PMF over split points:
// m+1 values for m points, each within rank_error (with lower and upper
// the band it gives) with probability confidence.
type distributionResponse struct {
	Type        string    `json:"type"`
	N           uint64    `json:"n"`
	RankError   float64   `json:"rank_error"`
	Confidence  float64   `json:"confidence"`
	SplitPoints []number  `json:"split_points"`
	Values      []float64 `json:"values"`
	Lower       []float64 `json:"lower"`
	Upper       []float64 `json:"upper"`
}

// kllOf returns sk as a KLL sketch, or a Conflict naming label.
func kllOf(label string, sk sketch.Sketch, what string) (sketch.KLL, error) {
	k, ok := sketch.KLLOf(sk)
	if !ok {
		return nil, sketch.Errorf(sketch.Conflict, "%s is a %s sketch; %s needs a kll sketch", label, sk.Kind().Type, what)
	}
	return k, nil
}

// kllValues reads values or split points (the text of ?value= or
// ?split=, already checked to be finite numbers) as the sketch's items:
// doubles, or longs parsed as int64s, never through a float64, so that
// 2^53+1 and 2^63-1 are asked about as they are.
func kllValues(k sketch.KLL, key string, texts []string) ([]sketch.Value, error) {
	out := make([]sketch.Value, len(texts))
	for i, t := range texts {
		if k.Items() != kll.Longs {
			f, _ := strconv.ParseFloat(t, 64)
			out[i] = sketch.Double(f)
			continue
		}
		v, err := parseLong(t)
		if err != nil {
			return nil, sketch.Errorf(sketch.Invalid, "query parameter %s: %s; this kll sketch keeps longs", key, err)
		}
		out[i] = sketch.Long(v)
	}
	return out, nil
}

// parseLong reads a long as a sketch of longs takes it: an optional sign
// and decimal digits within the int64 range, [-2^63, 2^63-1]. The error
// quotes the text and says whether it is not an integer or out of range.
func parseLong(t string) (int64, error) {
	digits := strings.TrimLeft(t, "+-")
	if len(t)-len(digits) > 1 || digits == "" || strings.Trim(digits, "0123456789") != "" {
		// Checked before ParseInt, which calls a long enough run of digits
		// out of range whatever follows it.
		return 0, fmt.Errorf("%q is not an integer (write one in decimal, like 42 or -7)", clip(t))
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is out of the int64 range [%d, %d]", clip(t), int64(math.MinInt64), int64(math.MaxInt64))
	}
	return v, nil
}

// ranksOf answers the ranks of values (their text) in a KLL sketch.
func ranksOf(label string, sk sketch.Sketch, texts []string, inclusive bool) (rankResponse, error) {
	k, err := kllOf(label, sk, "a rank")
	if err != nil {
		return rankResponse{}, err
	}
	values, err := kllValues(k, "value", texts)
	if err != nil {
		return rankResponse{}, err
	}
	eps := k.RankError(false)
	resp := rankResponse{Type: string(sketch.TypeKLL), N: k.N(), RankError: eps, Confidence: kllConfidence, Ranks: make([]rankValue, len(values))}
	v := k.View()
	for i, x := range values {
		r := 0.0
		if !k.IsEmpty() {
			if r, err = v.Rank(x, inclusive); err != nil {
				return resp, err
			}
		}
		resp.Ranks[i] = rankValue{Value: number(x), Rank: r, Lower: math.Max(0, r-eps), Upper: math.Min(1, r+eps)}
	}
	return resp, nil
}

// distribution answers a KLL sketch's CDF (pmf false) or PMF over split
// points (their text).
func distribution(label string, sk sketch.Sketch, texts []string, inclusive, pmf bool) (distributionResponse, error) {
	what := "a cdf"
	if pmf {
		what = "a pmf"
	}
	k, err := kllOf(label, sk, what)
	if err != nil {
		return distributionResponse{}, err
	}
	splits, err := kllValues(k, "split", texts)
	if err != nil {
		return distributionResponse{}, err
	}
	for i := 1; i < len(splits); i++ {
		if !splits[i-1].Less(splits[i]) {
			return distributionResponse{}, sketch.Errorf(sketch.Invalid, "split points must increase strictly; %s follows %s", splits[i], splits[i-1])
		}
	}
	eps := k.RankError(pmf)
	resp := distributionResponse{Type: string(sketch.TypeKLL), N: k.N(), RankError: eps, Confidence: kllConfidence, SplitPoints: make([]number, len(splits))}
	for i, x := range splits {
		resp.SplitPoints[i] = number(x)
	}
	if k.IsEmpty() {
		resp.Values, resp.Lower, resp.Upper = []float64{}, []float64{}, []float64{}
		return resp, nil
	}
	v := k.View()
	if pmf {
		resp.Values, err = v.PMF(splits, inclusive)
	} else {
		resp.Values, err = v.CDF(splits, inclusive)
	}
	if err != nil {
		return resp, sketch.Wrap(sketch.Invalid, err, strings.TrimPrefix(err.Error(), "kll: "))
	}
	for _, x := range resp.Values {
		resp.Lower = append(resp.Lower, math.Max(0, x-eps))
		resp.Upper = append(resp.Upper, math.Min(1, x+eps))
	}
	if !pmf {
		// The CDF ends at 1 exactly: every value is at most the max.
		last := len(resp.Values) - 1
		resp.Lower[last], resp.Upper[last] = 1, 1
	}
	return resp, nil
}

func (s *Server) handleRank(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	q, err := query(r, "value", "inclusive")
	if err != nil {
		return err
	}
	values, inclusive, err := textsInclusive(q, "value")
	if err != nil {
		return err
	}
	return answerOne(s, w, r, name, func(sk sketch.Sketch) (rankResponse, error) {
		return ranksOf(strconv.Quote(name), sk, values, inclusive)
	})
}

func (s *Server) handleCDF(w http.ResponseWriter, r *http.Request) error {
	return s.distribution(w, r, false)
}
func (s *Server) handlePMF(w http.ResponseWriter, r *http.Request) error {
	return s.distribution(w, r, true)
}

func (s *Server) distribution(w http.ResponseWriter, r *http.Request, pmf bool) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	q, err := query(r, "split", "inclusive")
	if err != nil {
		return err
	}
	splits, inclusive, err := textsInclusive(q, "split")
	if err != nil {
		return err
	}
	return answerOne(s, w, r, name, func(sk sketch.Sketch) (distributionResponse, error) {
		return distribution(strconv.Quote(name), sk, splits, inclusive, pmf)
	})
}

type seriesRankResponse struct {
	rangeResponse
	rankResponse
}

type seriesDistributionResponse struct {
	rangeResponse
	distributionResponse
}

func (s *Server) handleSeriesRank(w http.ResponseWriter, r *http.Request) error {
	name, q, from, to, ss, err := s.seriesRange(r, "value", "inclusive", "buckets")
	if err != nil {
		return err
	}
	values, inclusive, err := textsInclusive(q, "value")
	if err != nil {
		return err
	}
	plan, u, list, err := s.rangeUnionOf(r, q, ss, name, from, to)
	if err != nil {
		return err
	}
	resp, err := ranksOf("series "+strconv.Quote(name), u, values, inclusive)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, seriesRankResponse{rangeResponse: rangeDTO(plan, list), rankResponse: resp})
}

func (s *Server) handleSeriesCDF(w http.ResponseWriter, r *http.Request) error {
	return s.seriesDistribution(w, r, false)
}

func (s *Server) handleSeriesPMF(w http.ResponseWriter, r *http.Request) error {
	return s.seriesDistribution(w, r, true)
}

func (s *Server) seriesDistribution(w http.ResponseWriter, r *http.Request, pmf bool) error {
	name, q, from, to, ss, err := s.seriesRange(r, "split", "inclusive", "buckets")
	if err != nil {
		return err
	}
	splits, inclusive, err := textsInclusive(q, "split")
	if err != nil {
		return err
	}
	plan, u, list, err := s.rangeUnionOf(r, q, ss, name, from, to)
	if err != nil {
		return err
	}
	resp, err := distribution("series "+strconv.Quote(name), u, splits, inclusive, pmf)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, seriesDistributionResponse{rangeResponse: rangeDTO(plan, list), distributionResponse: resp})
}

// numbersInclusive parses a quantile-style read's query: the numbers
// under param (each in [lo, hi]) and ?inclusive (default true).
func numbersInclusive(q url.Values, param string, lo, hi float64) ([]float64, bool, error) {
	xs, err := floatList(q, param, lo, hi)
	if err != nil {
		return nil, false, err
	}
	inclusive, err := boolParam(q, "inclusive", true)
	return xs, inclusive, err
}

// textsInclusive parses a rank's or a distribution's query: the values
// under param, each a finite number, as written (kllValues reads them as
// the sketch's items once it is known), and ?inclusive (default true).
func textsInclusive(q url.Values, param string) ([]string, bool, error) {
	_, texts, err := numberList(q, param, -math.MaxFloat64, math.MaxFloat64)
	if err != nil {
		return nil, false, err
	}
	inclusive, err := boolParam(q, "inclusive", true)
	return texts, inclusive, err
}
