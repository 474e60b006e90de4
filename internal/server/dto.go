package server

import (
	"encoding/json"
	"math"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/ingest"
	"github.com/sketchd/sketchd/internal/sketch"
)

// createRequest is the body of PUT /v1/sketches/{name}. Absent fields take
// their defaults; fields of the other sketch type are refused.
type createRequest struct {
	Type         *string  `json:"type"`
	Log2m        *int     `json:"log2m"`
	Regwidth     *int     `json:"regwidth"`
	Expthresh    *int64   `json:"expthresh"`
	Sparse       *bool    `json:"sparse"`
	Width        *int     `json:"width"`
	Depth        *int     `json:"depth"`
	Epsilon      *float64 `json:"epsilon"`
	Delta        *float64 `json:"delta"`
	Conservative *bool    `json:"conservative"`
	TopK         *int     `json:"topk"`
	Metric       *bool    `json:"metric"`
}

func (c createRequest) spec() (sketch.Spec, error) {
	typ := sketch.TypeHLL
	if c.Type != nil {
		typ = sketch.Type(*c.Type)
	}
	var sp sketch.Spec
	if c.Metric != nil {
		sp.Metric = *c.Metric
	}
	switch typ {
	case sketch.TypeHLL:
		if name := firstSet(map[string]bool{"width": c.Width != nil, "depth": c.Depth != nil, "epsilon": c.Epsilon != nil,
			"delta": c.Delta != nil, "conservative": c.Conservative != nil, "topk": c.TopK != nil}); name != "" {
			return sp, sketch.Errorf(sketch.Invalid, "%s is a cms parameter; this sketch is an hll", name)
		}
		p := hll.DefaultParams()
		setInt(&p.Log2m, c.Log2m)
		setInt(&p.Regwidth, c.Regwidth)
		if c.Expthresh != nil {
			p.Expthresh = *c.Expthresh
		}
		if c.Sparse != nil {
			p.Sparse = *c.Sparse
		}
		sp.Params = sketch.HLLParams{Params: p}
	case sketch.TypeCMS:
		if name := firstSet(map[string]bool{"log2m": c.Log2m != nil, "regwidth": c.Regwidth != nil,
			"expthresh": c.Expthresh != nil, "sparse": c.Sparse != nil}); name != "" {
			return sp, sketch.Errorf(sketch.Invalid, "%s is an hll parameter; this sketch is a cms", name)
		}
		shape := c.Width != nil || c.Depth != nil
		bound := c.Epsilon != nil || c.Delta != nil
		var p cms.Params
		switch {
		case shape && bound:
			return sp, sketch.Errorf(sketch.Invalid, "give either width and depth or epsilon and delta, not both")
		case shape && (c.Width == nil || c.Depth == nil):
			return sp, sketch.Errorf(sketch.Invalid, "width and depth go together")
		case bound && (c.Epsilon == nil || c.Delta == nil):
			return sp, sketch.Errorf(sketch.Invalid, "epsilon and delta go together")
		case shape:
			p = cms.Params{Width: *c.Width, Depth: *c.Depth}
		case bound:
			var err error
			if p, err = cms.ParamsFromError(*c.Epsilon, *c.Delta); err != nil {
				return sp, sketch.Wrap(sketch.Invalid, err, "invalid cms parameters: "+trimCMS(err.Error()))
			}
		default:
			p = cms.DefaultParams()
		}
		if c.Conservative != nil {
			p.Conservative = *c.Conservative
		}
		setInt(&p.TopK, c.TopK)
		sp.Params = sketch.CMSParams{Params: p}
	default:
		if _, err := sketch.Lookup(typ); err != nil {
			return sp, err
		}
		return sp, sketch.Errorf(sketch.Invalid, "sketches of type %s cannot be created over HTTP", typ)
	}
	return sp, sp.Validate()
}

func firstSet(m map[string]bool) string {
	for _, k := range []string{"log2m", "regwidth", "expthresh", "sparse", "width", "depth", "epsilon", "delta", "conservative", "topk"} {
		if m[k] {
			return k
		}
	}
	return ""
}

func setInt(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

func trimCMS(s string) string {
	if len(s) > 5 && s[:5] == "cms: " {
		return s[5:]
	}
	return s
}

// hllResponse describes an HLL sketch. StdError is relative (a fraction of
// Cardinality); 0 for EMPTY and EXPLICIT, which are exact.
type hllResponse struct {
	Name           string    `json:"name"`
	Type           string    `json:"type"`
	Log2m          int       `json:"log2m"`
	Regwidth       int       `json:"regwidth"`
	Expthresh      int64     `json:"expthresh"`
	Sparse         bool      `json:"sparse"`
	Representation string    `json:"representation"`
	Cardinality    float64   `json:"cardinality"`
	StdError       float64   `json:"std_error"`
	SizeBytes      int       `json:"size_bytes"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	Metric         bool      `json:"metric"`
	// FoldedFromLog2m is set after a union with ?fold=true folded the
	// stored sketch: its log2m before.
	FoldedFromLog2m int `json:"folded_from_log2m,omitempty"`
}

// cmsResponse describes a Count-Min sketch.
type cmsResponse struct {
	Name         string    `json:"name"`
	Type         string    `json:"type"`
	Width        int       `json:"width"`
	Depth        int       `json:"depth"`
	Epsilon      float64   `json:"epsilon"`
	Delta        float64   `json:"delta"`
	Conservative bool      `json:"conservative"`
	TopK         int       `json:"topk"`
	Total        int64     `json:"total"`
	SizeBytes    int       `json:"size_bytes"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	Metric       bool      `json:"metric"`
}

// describe converts a store Info to its response shape.
func describe(in sketch.Info) any {
	switch p := in.Spec.Params.(type) {
	case sketch.CMSParams:
		return cmsResponse{
			Name: in.Name, Type: string(sketch.TypeCMS), Width: p.Width, Depth: p.Depth,
			Epsilon: p.Epsilon(), Delta: p.Delta(), Conservative: p.Conservative, TopK: p.TopK,
			Total: in.Total, SizeBytes: in.SizeBytes, CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt, Metric: in.Spec.Metric,
		}
	case sketch.HLLParams:
		return hllResponse{
			Name: in.Name, Type: string(sketch.TypeHLL), Log2m: p.Log2m, Regwidth: p.Regwidth, Expthresh: p.Expthresh,
			Sparse: p.Sparse, Representation: in.Representation, Cardinality: finite(in.Cardinality), StdError: in.StdError,
			SizeBytes: in.SizeBytes, CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt, Metric: in.Spec.Metric,
		}
	}
	return baseResponse{Name: in.Name, Type: string(in.Spec.Type()), SizeBytes: in.SizeBytes,
		CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt, Metric: in.Spec.Metric}
}

// baseResponse describes a sketch of a kind without a shape of its own.
type baseResponse struct {
	Name      string    `json:"name"`
	Type      string    `json:"type"`
	SizeBytes int       `json:"size_bytes"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Metric    bool      `json:"metric"`
}

// finite guards JSON encoding: the estimator never returns NaN for a
// stored sketch, but a NaN would make the whole response fail.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

type listResponse struct {
	Sketches []any `json:"sketches"`
	// Next is the value of ?after= for the next page; absent on the last.
	Next string `json:"next,omitempty"`
}

type addResponse struct {
	Accepted int `json:"accepted"`
}

// idValue is an id echoed back as the client gave it: a JSON number for
// an integer id, a string for a text id.
func idValue(id cms.ID) any {
	if id.IsText() {
		return id.Text()
	}
	return id.Int()
}

func cmsID(id ingest.ID) cms.ID {
	if id.IsText {
		return cms.TextID(id.Text)
	}
	return cms.IntID(id.Int)
}

type frequencyResult struct {
	ID         any     `json:"id"`
	Estimate   uint64  `json:"estimate"`
	ErrorBound float64 `json:"error_bound"`
	Confidence float64 `json:"confidence"`
}

type frequencyResponse struct {
	Total   uint64            `json:"total"`
	Results []frequencyResult `json:"results"`
}

type topItem struct {
	ID       any    `json:"id"`
	Estimate uint64 `json:"estimate"`
}

type topResponse struct {
	Items []topItem `json:"items"`
}

type unionRequest struct {
	Sketches []operand `json:"sketches"`
	Into     string    `json:"into"`
}

// unionResponse is the union of HLL sketches; StdError is relative.
type unionResponse struct {
	Cardinality    float64 `json:"cardinality"`
	StdError       float64 `json:"std_error"`
	Log2m          int     `json:"log2m"`
	Regwidth       int     `json:"regwidth"`
	Representation string  `json:"representation"`
	Into           string  `json:"into,omitempty"`
	// Warnings say where a series range's covered range differs from
	// the one asked for.
	Warnings []string `json:"warnings,omitempty"`
}

// unionCMSResponse is the union of Count-Min sketches.
type unionCMSResponse struct {
	Type     string   `json:"type"`
	Total    uint64   `json:"total"`
	Width    int      `json:"width"`
	Depth    int      `json:"depth"`
	Into     string   `json:"into,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

type intersectionRequest struct {
	Sketches []operand `json:"sketches"`
	Method   string    `json:"method"`
}

type bounded struct {
	Estimate float64 `json:"estimate"`
	Error    float64 `json:"error"`
}

type term struct {
	Sketches    []string `json:"sketches"`
	Cardinality float64  `json:"cardinality"`
}

type intersectionResponse struct {
	Estimate         float64  `json:"estimate"`
	RawEstimate      float64  `json:"raw_estimate"`
	Error            float64  `json:"error"`
	Lower            float64  `json:"lower"`
	Upper            float64  `json:"upper"`
	Spurious         bool     `json:"spurious"`
	Reliable         bool     `json:"reliable"`
	Warnings         []string `json:"warnings"`
	Terms            []term   `json:"terms"`
	Overlap          float64  `json:"overlap"`
	CardinalityRatio float64  `json:"cardinality_ratio"`
	Log2m            int      `json:"log2m"`
	Method           string   `json:"method"`
	Jaccard          *bounded `json:"jaccard,omitempty"`
	ANotB            *bounded `json:"a_not_b,omitempty"`
	BNotA            *bounded `json:"b_not_a,omitempty"`
}

func intersectionDTO(x sketch.Intersection) intersectionResponse {
	out := intersectionResponse{
		Estimate: finite(x.Estimate), RawEstimate: finite(x.RawEstimate), Error: finite(x.Error),
		Lower: finite(x.Lower), Upper: finite(x.Upper), Spurious: x.Spurious, Reliable: x.Reliable,
		Warnings: x.Warnings, Overlap: finite(x.Overlap), CardinalityRatio: finite(x.CardinalityRatio),
		Log2m: x.Log2m, Method: string(x.Method),
		Jaccard: boundedDTO(x.Jaccard), ANotB: boundedDTO(x.ANotB), BNotA: boundedDTO(x.BNotA),
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	for _, t := range x.Terms {
		out.Terms = append(out.Terms, term{Sketches: t.Sketches, Cardinality: finite(t.Cardinality)})
	}
	return out
}

func boundedDTO(b *sketch.Bounded) *bounded {
	if b == nil {
		return nil
	}
	return &bounded{Estimate: finite(b.Estimate), Error: finite(b.Error)}
}

type foldRequest struct {
	Log2m    *int   `json:"log2m"`
	Regwidth *int   `json:"regwidth"`
	Into     string `json:"into"`
}

type eventsRequest struct {
	Events []eventDTO `json:"events"`
}

type eventDTO struct {
	ID       json.RawMessage `json:"id"`
	Sketches []string        `json:"sketches"`
	Series   []string        `json:"series"`
	TS       *string         `json:"ts"`
}

type eventsResponse struct {
	Accepted int `json:"accepted"`
}
