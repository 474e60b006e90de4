package server

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sketchd/sketchd/internal/airlift"
	"github.com/sketchd/sketchd/internal/bloom"
	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/cpc"
	"github.com/sketchd/sketchd/internal/dshll"
	"github.com/sketchd/sketchd/internal/freq"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/ingest"
	"github.com/sketchd/sketchd/internal/kll"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/theta"
	"github.com/sketchd/sketchd/internal/zeta"
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
	DomainBits   *int     `json:"domain_bits"`
	LgK          *int     `json:"lg_k"`
	// A Bloom filter's: expected_items and fpp, or bits and hashes.
	ExpectedItems *int64   `json:"expected_items"`
	FPP           *float64 `json:"fpp"`
	Bits          *int     `json:"bits"`
	Hashes        *int     `json:"hashes"`
	// A KLL sketch's: k and what it keeps (double or long).
	K     *int    `json:"k"`
	Items *string `json:"items"`
	// A DataSketches HLL's target type.
	TgtType *string `json:"tgt_type"`
	// A zeta_hll's precisions, an airlift_hll's index bits.
	Precision  *int  `json:"precision"`
	SparsePrec *int  `json:"sparse_precision"`
	IndexBits  *int  `json:"index_bits"`
	Metric     *bool `json:"metric"`
	// When the sketch expires: a duration from its last write, or an
	// instant (handlers_expiry.go).
	ExpireAfter *string `json:"expire_after"`
	ExpireAt    *string `json:"expire_at"`
}

// kindFields names the create fields each kind takes.
var kindFields = map[sketch.Type]string{
	sketch.TypeHLL:        "log2m regwidth expthresh sparse",
	sketch.TypeCMS:        "width depth epsilon delta conservative topk domain_bits",
	sketch.TypeTheta:      "lg_k",
	sketch.TypeFreq:       "lg_k",
	sketch.TypeDSHLL:      "lg_k tgt_type",
	sketch.TypeCPC:        "lg_k",
	sketch.TypeBloom:      "expected_items fpp bits hashes",
	sketch.TypeKLL:        "k items",
	sketch.TypeZetaHLL:    "precision sparse_precision",
	sketch.TypeAirliftHLL: "index_bits",
}

// foreignField returns a field set in c that a sketch of type typ does
// not take, and the kind it belongs to.
func (c createRequest) foreignField(typ sketch.Type) (string, sketch.Type) {
	set := map[string]bool{
		"log2m": c.Log2m != nil, "regwidth": c.Regwidth != nil, "expthresh": c.Expthresh != nil, "sparse": c.Sparse != nil,
		"width": c.Width != nil, "depth": c.Depth != nil, "epsilon": c.Epsilon != nil, "delta": c.Delta != nil,
		"conservative": c.Conservative != nil, "topk": c.TopK != nil, "domain_bits": c.DomainBits != nil, "lg_k": c.LgK != nil,
		"expected_items": c.ExpectedItems != nil, "fpp": c.FPP != nil, "bits": c.Bits != nil, "hashes": c.Hashes != nil,
		"k": c.K != nil, "items": c.Items != nil, "tgt_type": c.TgtType != nil,
		"precision": c.Precision != nil, "sparse_precision": c.SparsePrec != nil, "index_bits": c.IndexBits != nil,
	}
	own := " " + kindFields[typ] + " "
	for _, other := range []sketch.Type{sketch.TypeHLL, sketch.TypeCMS, sketch.TypeTheta, sketch.TypeDSHLL, sketch.TypeBloom, sketch.TypeKLL, sketch.TypeZetaHLL, sketch.TypeAirliftHLL} {
		for _, f := range strings.Fields(kindFields[other]) {
			if set[f] && !strings.Contains(own, " "+f+" ") {
				return f, other
			}
		}
	}
	return "", ""
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
	var err error
	if sp.Expiry, err = parseExpiry(c.ExpireAfter, c.ExpireAt); err != nil {
		return sp, err
	}
	if _, known := kindFields[typ]; known {
		if f, other := c.foreignField(typ); f != "" {
			return sp, sketch.Errorf(sketch.Invalid, "%s is a parameter of %s sketches; this sketch is %s", f, other, typ)
		}
	}
	switch typ {
	case sketch.TypeHLL:
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
		setInt(&p.DomainBits, c.DomainBits)
		sp.Params = sketch.CMSParams{Params: p}
	case sketch.TypeTheta:
		p := theta.DefaultParams()
		setInt(&p.LgK, c.LgK)
		sp.Params = sketch.ThetaParams{Params: p}
	case sketch.TypeFreq:
		p := freq.DefaultParams()
		setInt(&p.LgK, c.LgK)
		sp.Params = sketch.FreqParams{Params: p}
	case sketch.TypeDSHLL:
		p := dshll.DefaultParams()
		setInt(&p.LgK, c.LgK)
		if c.TgtType != nil {
			t, err := dshll.ParseType(*c.TgtType)
			if err != nil {
				return sp, sketch.Errorf(sketch.Invalid, "tgt_type %q is not HLL_4, HLL_6 or HLL_8", clip(*c.TgtType))
			}
			p.Type = t
		}
		sp.Params = sketch.DSHLLParams{Params: p}
	case sketch.TypeCPC:
		p := cpc.DefaultParams()
		setInt(&p.LgK, c.LgK)
		sp.Params = sketch.CPCParams{Params: p}
	case sketch.TypeBloom:
		p, err := c.bloomParams()
		if err != nil {
			return sp, err
		}
		sp.Params = sketch.BloomParams{Params: p}
	case sketch.TypeKLL:
		p := sketch.KLLParams{K: kll.DefaultK, Items: kll.Doubles}
		setInt(&p.K, c.K)
		if c.Items != nil {
			switch *c.Items {
			case "double":
			case "long":
				p.Items = kll.Longs
			default:
				return sp, sketch.Errorf(sketch.Invalid, "items=%q: a kll sketch keeps double or long values", clip(*c.Items))
			}
		}
		sp.Params = p
	case sketch.TypeZetaHLL:
		// A precision alone takes BigQuery's sparse precision for it.
		p := zeta.DefaultParams()
		if c.Precision != nil {
			p = zeta.ParamsFor(*c.Precision)
		}
		setInt(&p.SparsePrecision, c.SparsePrec)
		sp.Params = sketch.ZetaParams{Params: p}
	case sketch.TypeAirliftHLL:
		p := airlift.DefaultParams()
		setInt(&p.IndexBits, c.IndexBits)
		sp.Params = sketch.AirliftParams{Params: p}
	default:
		if _, err := sketch.Lookup(typ); err != nil {
			return sp, err
		}
		return sp, sketch.Errorf(sketch.Invalid, "sketches of type %s cannot be created over HTTP", typ)
	}
	return sp, sp.Validate()
}

// bloomParams reads a Bloom filter's parameters: the items it is made for
// and its rate, or its shape; neither gives the default filter.
func (c createRequest) bloomParams() (bloom.Params, error) {
	shape := c.Bits != nil || c.Hashes != nil
	stated := c.ExpectedItems != nil || c.FPP != nil
	switch {
	case shape && stated:
		return bloom.Params{}, sketch.Errorf(sketch.Invalid, "give either expected_items and fpp or bits and hashes, not both")
	case shape && (c.Bits == nil || c.Hashes == nil):
		return bloom.Params{}, sketch.Errorf(sketch.Invalid, "bits and hashes go together")
	case stated && (c.ExpectedItems == nil || c.FPP == nil):
		return bloom.Params{}, sketch.Errorf(sketch.Invalid, "expected_items and fpp go together")
	case shape:
		return bloom.Params{Bits: *c.Bits, Hashes: *c.Hashes}, nil
	case stated:
		p, err := bloom.ParamsFor(*c.ExpectedItems, *c.FPP)
		if err != nil {
			return p, sketch.Wrap(sketch.Invalid, err, "invalid bloom parameters: "+strings.TrimPrefix(err.Error(), "bloom: "))
		}
		return p, nil
	}
	return bloom.DefaultParams(), nil
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
	LowerBound     float64   `json:"lower_bound"`
	UpperBound     float64   `json:"upper_bound"`
	Estimator      string    `json:"estimator"`
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
	DomainBits   int       `json:"domain_bits,omitempty"`
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
			Epsilon: p.Epsilon(), Delta: p.Delta(), Conservative: p.Conservative, TopK: p.TopK, DomainBits: p.DomainBits,
			Total: in.Total, SizeBytes: in.SizeBytes, CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt, Metric: in.Spec.Metric,
		}
	case sketch.HLLParams:
		return hllResponse{
			Name: in.Name, Type: string(sketch.TypeHLL), Log2m: p.Log2m, Regwidth: p.Regwidth, Expthresh: p.Expthresh,
			Sparse: p.Sparse, Representation: in.Representation, Cardinality: finite(in.Cardinality), StdError: finite(in.StdError),
			LowerBound: finite(in.Lower), UpperBound: finite(in.Upper), Estimator: hll.PostgreSQLEstimator.String(),
			SizeBytes: in.SizeBytes, CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt, Metric: in.Spec.Metric,
		}
	case sketch.ThetaParams:
		return sampledResponse{Name: in.Name, Type: string(sketch.TypeTheta), LgK: p.LgK, Cardinality: in.Cardinality,
			Lower: in.Lower, Upper: in.Upper, Theta: in.Theta, Retained: in.Retained,
			SizeBytes: in.SizeBytes, CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt, Metric: in.Spec.Metric}
	case sketch.DSHLLParams:
		r := registersOf(in)
		r.LgK, r.TgtType = &p.LgK, p.Type.String()
		return r
	case sketch.CPCParams:
		r := registersOf(in)
		r.LgK = &p.LgK
		return r
	case sketch.KLLParams:
		return kllResponse{Name: in.Name, Type: string(sketch.TypeKLL), kllState: kllStateOf(p, in),
			CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt, Metric: in.Spec.Metric}
	case sketch.BloomParams:
		return bloomResponse{Name: in.Name, Type: string(sketch.TypeBloom), bloomState: bloomStateOf(p, in),
			CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt, Metric: in.Spec.Metric}
	case sketch.ZetaParams:
		r := registersOf(in)
		r.Precision, r.SparsePrecision = &p.Precision, &p.SparsePrecision
		r.ValueType, r.NumValues = in.ValueType, &in.Total
		return r
	case sketch.AirliftParams:
		r := registersOf(in)
		r.IndexBits = &p.IndexBits
		return r
	case sketch.FreqParams:
		imp := in.Total
		return sampledResponse{Name: in.Name, Type: string(sketch.TypeFreq), LgK: p.LgK, Cardinality: in.Cardinality,
			Lower: in.Lower, Upper: in.Upper, Theta: in.Theta, Retained: in.Retained, Impressions: &imp,
			SizeBytes: in.SizeBytes, CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt, Metric: in.Spec.Metric}
	}
	return baseResponse{Name: in.Name, Type: string(in.Spec.Type()), SizeBytes: in.SizeBytes,
		CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt, Metric: in.Spec.Metric}
}

// sampledResponse describes a theta or frequency sketch: the distinct
// count with its bounds at two standard deviations (about 95%), the
// sampling rate theta and the hashes kept; a frequency sketch also its
// estimated impressions.
type sampledResponse struct {
	Name        string    `json:"name"`
	Type        string    `json:"type"`
	LgK         int       `json:"lg_k"`
	Cardinality float64   `json:"cardinality"`
	Lower       float64   `json:"lower_bound"`
	Upper       float64   `json:"upper_bound"`
	Theta       float64   `json:"theta"`
	Retained    int       `json:"retained"`
	Impressions *int64    `json:"impressions,omitempty"`
	SizeBytes   int       `json:"size_bytes"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	Metric      bool      `json:"metric"`
}

// registersResponse describes a sketch of the HLL family in another
// ecosystem's format (ds_hll, cpc, zeta_hll, airlift_hll): the
// estimate with its relative standard error and its bounds at two
// standard deviations, the representation, and the kind's parameters; a
// zeta_hll sketch also the type of ids it counts and how many values
// were added.
type registersResponse struct {
	Name string `json:"name,omitempty"`
	registersState
	SizeBytes int       `json:"size_bytes"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Metric    bool      `json:"metric"`
}

// registersState is what a description and a union answer of the family
// share: the kind, its parameters, the representation, and the estimate
// with its error and bounds.
type registersState struct {
	Type            string  `json:"type"`
	LgK             *int    `json:"lg_k,omitempty"`
	TgtType         string  `json:"tgt_type,omitempty"`
	Precision       *int    `json:"precision,omitempty"`
	SparsePrecision *int    `json:"sparse_precision,omitempty"`
	ValueType       string  `json:"value_type,omitempty"`
	NumValues       *int64  `json:"num_values,omitempty"`
	IndexBits       *int    `json:"index_bits,omitempty"`
	Representation  string  `json:"representation"`
	Cardinality     float64 `json:"cardinality"`
	StdError        float64 `json:"std_error"`
	Lower           float64 `json:"lower_bound"`
	Upper           float64 `json:"upper_bound"`
}

func registersOf(in sketch.Info) registersResponse {
	return registersResponse{Name: in.Name,
		registersState: registersState{Type: string(in.Spec.Type()), Representation: in.Representation,
			Cardinality: finite(in.Cardinality), StdError: in.StdError, Lower: in.Lower, Upper: in.Upper},
		SizeBytes: in.SizeBytes, CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt, Metric: in.Spec.Metric}
}

// unionRegistersResponse is the union of sketches of the HLL family in
// another ecosystem's format.
type unionRegistersResponse struct {
	registersState
	Into     string   `json:"into,omitempty"`
	Matched  int      `json:"matched,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// unionRegisters describes u as a union answer, or false when it is not of
// the family.
func unionRegisters(u sketch.Sketch, into string, warnings []string) (unionRegistersResponse, bool) {
	var in sketch.Info
	u.Describe(&in)
	in.Spec.Params = u.Params()
	d, ok := describe(in).(registersResponse)
	if !ok {
		return unionRegistersResponse{}, false
	}
	return unionRegistersResponse{registersState: d.registersState, Into: into, Warnings: warnings}, true
}

// bloomState is a Bloom filter's shape, stated items and rate (absent
// for a filter created from its shape) and state: bits set, estimated
// distinct items and the current false-positive rate.
type bloomState struct {
	Bits              int      `json:"bits"`
	Hashes            int      `json:"hashes"`
	ExpectedItems     *int64   `json:"expected_items,omitempty"`
	FPP               *float64 `json:"fpp,omitempty"`
	BitsSet           int      `json:"bits_set"`
	EstimatedItems    float64  `json:"estimated_items"`
	FalsePositiveRate float64  `json:"false_positive_rate"`
	SizeBytes         int      `json:"size_bytes"`
}

func bloomStateOf(p sketch.BloomParams, in sketch.Info) bloomState {
	st := bloomState{Bits: p.Bits, Hashes: p.Hashes, BitsSet: in.BitsSet, EstimatedItems: finite(in.Cardinality),
		FalsePositiveRate: finite(in.FalsePositiveRate), SizeBytes: in.SizeBytes}
	if p.Stated() {
		n, fpp := p.ExpectedItems, p.FPP
		st.ExpectedItems, st.FPP = &n, &fpp
	}
	return st
}

// kllState is a KLL sketch's parameters and state: the values counted,
// their min and max (absent while empty), the items kept and the rank
// error of its answers.
type kllState struct {
	K            int     `json:"k"`
	Items        string  `json:"items"`
	N            int64   `json:"n"`
	Min          *number `json:"min,omitempty"`
	Max          *number `json:"max,omitempty"`
	Retained     int     `json:"retained"`
	RankError    float64 `json:"rank_error"`
	RankErrorPMF float64 `json:"rank_error_pmf"`
	SizeBytes    int     `json:"size_bytes"`
}

func kllStateOf(p sketch.KLLParams, in sketch.Info) kllState {
	return kllState{K: p.K, Items: p.Items.String(), N: in.Total, Min: numberPtr(in.Min), Max: numberPtr(in.Max), Retained: in.Retained,
		RankError: in.RankError, RankErrorPMF: in.RankErrorPMF, SizeBytes: in.SizeBytes}
}

// number is a sketch's value in an answer (sketch.Value): a double as
// encoding/json writes a float64, a long as its exact integer literal
// (9007199254740993, 9223372036854775807), never rounded through a
// float64. Go's encoding/json and Python's json read such a literal
// exactly into an int64 or int; JavaScript's JSON.parse rounds it beyond
// 2^53 (docs/quantiles.md says how to read it there).
type number sketch.Value

// MarshalJSON implements json.Marshaler.
func (n number) MarshalJSON() ([]byte, error) {
	v := sketch.Value(n)
	if v.IsLong() {
		return strconv.AppendInt(nil, v.Int64(), 10), nil
	}
	return json.Marshal(v.Float64())
}

// numberPtr is v as a number, nil for nil.
func numberPtr(v *sketch.Value) *number {
	if v == nil {
		return nil
	}
	n := number(*v)
	return &n
}

// kllResponse describes a KLL sketch.
type kllResponse struct {
	Name string `json:"name"`
	Type string `json:"type"`
	kllState
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Metric    bool      `json:"metric"`
}

// unionKLLResponse is the union of KLL sketches.
type unionKLLResponse struct {
	Type string `json:"type"`
	kllState
	Into     string   `json:"into,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// bloomResponse describes a Bloom filter.
type bloomResponse struct {
	Name string `json:"name"`
	Type string `json:"type"`
	bloomState
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Metric    bool      `json:"metric"`
}

// unionBloomResponse is the union of Bloom filters.
type unionBloomResponse struct {
	Type string `json:"type"`
	bloomState
	Into     string   `json:"into,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// checkResult is one id of a membership check: present means it may have
// been added (false positives at the filter's rate), absent that it never
// was.
type checkResult struct {
	ID      any  `json:"id"`
	Present bool `json:"present"`
}

// checkResponse answers a membership check.
type checkResponse struct {
	Present           int           `json:"present"`
	FalsePositiveRate float64       `json:"false_positive_rate"`
	Results           []checkResult `json:"results"`
}

// freshResponse answers an add with ?report=new: the ids that were new
// (absent before this add set them), in the order sent, as sent; an id
// sent twice is new at most once.
type freshResponse struct {
	Accepted int   `json:"accepted"`
	NewCount int   `json:"new_count"`
	New      []any `json:"new"`
}

// rangeCountResponse is a range count of a Count-Min over a value
// domain.
type rangeCountResponse struct {
	Lo         uint64  `json:"lo"`
	Hi         uint64  `json:"hi"`
	Estimate   uint64  `json:"estimate"`
	ErrorBound float64 `json:"error_bound"`
	Confidence float64 `json:"confidence"`
	Intervals  int     `json:"intervals"`
	Total      uint64  `json:"total"`
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
	// Prefix, in place of Sketches, unions every sketch whose name
	// starts with it.
	Prefix *string `json:"prefix"`
	Into   string  `json:"into"`
	// Estimator is an hll union's estimator: "postgresql" (absent) or
	// "improved".
	Estimator string `json:"estimator"`
}

// unionResponse is the union of HLL sketches; StdError is relative, the
// bounds at two standard errors.
type unionResponse struct {
	Cardinality    float64 `json:"cardinality"`
	StdError       float64 `json:"std_error"`
	LowerBound     float64 `json:"lower_bound"`
	UpperBound     float64 `json:"upper_bound"`
	Estimator      string  `json:"estimator"`
	Log2m          int     `json:"log2m"`
	Regwidth       int     `json:"regwidth"`
	Representation string  `json:"representation"`
	Into           string  `json:"into,omitempty"`
	// Matched is how many sketches a prefix union took.
	Matched int `json:"matched,omitempty"`
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
	Matched  int      `json:"matched,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

type intersectionRequest struct {
	Sketches []operand `json:"sketches"`
	Method   string    `json:"method"`
}

// bounded is an estimate with its error and bounds.
type bounded struct {
	Estimate float64 `json:"estimate"`
	Error    float64 `json:"error"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
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
	Verdict          string   `json:"verdict"`
	VerdictText      string   `json:"verdict_text"`
	Warnings         []string `json:"warnings"`
	Terms            []term   `json:"terms"`
	Overlap          float64  `json:"overlap"`
	CardinalityRatio float64  `json:"cardinality_ratio"`
	Log2m            int      `json:"log2m"`
	Method           string   `json:"method"`
	Jaccard          *bounded `json:"jaccard,omitempty"`
	ANotB            *bounded `json:"a_not_b,omitempty"`
	BNotA            *bounded `json:"b_not_a,omitempty"`
	// Within names the set that lies inside every other as far as the
	// errors tell; Same says every set does (sketch.Intersection).
	Within string `json:"within,omitempty"`
	Same   bool   `json:"same,omitempty"`
}

func intersectionDTO(x sketch.Intersection) intersectionResponse {
	out := intersectionResponse{
		Estimate: finite(x.Estimate), RawEstimate: finite(x.RawEstimate), Error: finite(x.Error),
		Lower: finite(x.Lower), Upper: finite(x.Upper), Spurious: x.Spurious, Reliable: x.Reliable,
		Verdict: string(x.Verdict), VerdictText: x.VerdictText, Warnings: x.Warnings, Overlap: finite(x.Overlap), CardinalityRatio: finite(x.CardinalityRatio),
		Log2m: x.Log2m, Method: string(x.Method),
		Jaccard: boundedDTO(x.Jaccard), ANotB: boundedDTO(x.ANotB), BNotA: boundedDTO(x.BNotA),
		Within: x.Within, Same: x.Same,
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
	return &bounded{Estimate: finite(b.Estimate), Error: finite(b.Error), Lower: finite(b.Lower), Upper: finite(b.Upper)}
}

type foldRequest struct {
	Log2m    *int   `json:"log2m"`
	Regwidth *int   `json:"regwidth"`
	Into     string `json:"into"`
}

type eventsResponse struct {
	Accepted int `json:"accepted"`
}

// thetaBounds is an estimate with its bounds at two standard deviations.
type thetaBounds struct {
	Estimate float64 `json:"estimate"`
	Error    float64 `json:"error"` // a quarter of the 2σ interval
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
}

// thetaIntersectionResponse is the intersection of theta sketches:
// DataSketches' estimate and bounds, whose error scales with the
// intersection rather than the union.
type thetaIntersectionResponse struct {
	Method           string       `json:"method"`
	Estimate         float64      `json:"estimate"`
	Error            float64      `json:"error"`
	Lower            float64      `json:"lower"`
	Upper            float64      `json:"upper"`
	Spurious         bool         `json:"spurious"`
	Reliable         bool         `json:"reliable"`
	Verdict          string       `json:"verdict"`
	VerdictText      string       `json:"verdict_text"`
	Warnings         []string     `json:"warnings"`
	Terms            []term       `json:"terms"`
	Overlap          float64      `json:"overlap"`
	CardinalityRatio float64      `json:"cardinality_ratio"`
	LgK              int          `json:"lg_k"`
	Retained         int          `json:"retained"`
	Theta            float64      `json:"theta"`
	Jaccard          *thetaBounds `json:"jaccard,omitempty"`
	ANotB            *thetaBounds `json:"a_not_b,omitempty"`
	BNotA            *thetaBounds `json:"b_not_a,omitempty"`
}

func boundsOf(t *theta.Sketch) thetaBounds {
	lo, _ := t.LowerBound(2)
	hi, _ := t.UpperBound(2)
	return thetaBounds{Estimate: t.Estimate(), Error: (hi - lo) / 4, Lower: lo, Upper: hi}
}

func thetaIntersectionDTO(labels []string, ts []*theta.Sketch) (thetaIntersectionResponse, error) {
	if len(ts) < 2 || len(ts) > sketch.MaxIntersect {
		return thetaIntersectionResponse{}, sketch.Errorf(sketch.Invalid, "an intersection takes 2 to %d sketches, got %d", sketch.MaxIntersect, len(ts))
	}
	x, err := theta.Intersect(ts...)
	if err != nil {
		return thetaIntersectionResponse{}, sketch.Wrap(sketch.Invalid, err, "cannot intersect these theta sketches")
	}
	b := boundsOf(x)
	lo1, _ := x.LowerBound(1)
	hi1, _ := x.UpperBound(1)
	resp := thetaIntersectionResponse{
		Method: "theta", Estimate: b.Estimate, Error: (hi1 - lo1) / 2, Lower: b.Lower, Upper: b.Upper,
		LgK: x.Params().LgK, Retained: x.Retained(), Theta: x.Theta(), Warnings: []string{},
	}
	small, large := math.Inf(1), 0.0
	for i, t := range ts {
		e := t.Estimate()
		resp.Terms = append(resp.Terms, term{Sketches: []string{labels[i]}, Cardinality: e})
		small, large = min(small, e), max(large, e)
	}
	if small > 0 {
		resp.Overlap = resp.Estimate / small
		resp.CardinalityRatio = large / small
	}
	resp.Spurious = b.Lower == 0
	// In exact mode (theta 1) the sketch holds every hash: the count is
	// exact, whatever its size.
	v, text, warnings := sketch.JudgeTheta(b.Estimate, b.Lower, b.Upper, x.Retained(), x.Theta() >= 1 && b.Lower == b.Upper)
	resp.Warnings = append(resp.Warnings, warnings...)
	resp.Verdict, resp.VerdictText = string(v), text
	resp.Reliable = v == sketch.VerdictReliable || v == sketch.VerdictExact
	if len(ts) == 2 {
		j := theta.Jaccard(ts[0], ts[1])
		resp.Jaccard = &thetaBounds{Estimate: j.Estimate, Error: (j.Upper - j.Lower) / 4, Lower: j.Lower, Upper: j.Upper}
		ab, ba := boundsOf(theta.AnotB(ts[0], ts[1])), boundsOf(theta.AnotB(ts[1], ts[0]))
		resp.ANotB, resp.BNotA = &ab, &ba
	}
	return resp, nil
}

type interval struct {
	Estimate float64 `json:"estimate"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
}

type frequencyClass struct {
	K           int      `json:"k"`
	OrMore      bool     `json:"or_more"`
	Users       interval `json:"users"`
	Impressions interval `json:"impressions"`
}

// frequencyReportResponse is the frequency report of a freq sketch.
type frequencyReportResponse struct {
	StdDevs     int              `json:"std_devs"`
	Theta       float64          `json:"theta"`
	Retained    int              `json:"retained"`
	Reach       interval         `json:"reach"`
	Impressions interval         `json:"impressions"`
	Classes     []frequencyClass `json:"classes"`
}

func intervalDTO(i freq.Interval) interval {
	return interval{Estimate: i.Estimate, Lower: i.Lower, Upper: i.Upper}
}

func frequencyReportDTO(r freq.Report) frequencyReportResponse {
	out := frequencyReportResponse{
		StdDevs: r.StdDevs, Theta: r.Theta, Retained: r.Retained,
		Reach: intervalDTO(r.Reach), Impressions: intervalDTO(r.Impressions), Classes: []frequencyClass{},
	}
	for _, c := range r.Classes {
		out.Classes = append(out.Classes, frequencyClass{K: c.K, OrMore: c.OrMore, Users: intervalDTO(c.Users), Impressions: intervalDTO(c.Impressions)})
	}
	return out
}

// unionSampledResponse is the union of theta or freq sketches.
type unionSampledResponse struct {
	Type        string   `json:"type"`
	Cardinality float64  `json:"cardinality"`
	Lower       float64  `json:"lower_bound"`
	Upper       float64  `json:"upper_bound"`
	Retained    int      `json:"retained"`
	Theta       float64  `json:"theta"`
	Into        string   `json:"into,omitempty"`
	Matched     int      `json:"matched,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
}

type overlapRequest struct {
	Sketches []operand `json:"sketches"`
	Method   string    `json:"method"`
}

// figure is one count of an overlap.
type figure struct {
	Estimate    float64 `json:"estimate"`
	RawEstimate float64 `json:"raw_estimate"`
	Error       float64 `json:"error"`
	Lower       float64 `json:"lower"`
	Upper       float64 `json:"upper"`
	Verdict     string  `json:"verdict"`
}

type countFigure struct {
	K int `json:"k"`
	figure
}

type operandFigure struct {
	Operand string `json:"operand"`
	figure
}

type regionFigure struct {
	Operands []string `json:"operands"`
	figure
}

// overlapResponse is how N sets overlap (sketch.Overlap).
type overlapResponse struct {
	Sets     int             `json:"sets"`
	Log2m    int             `json:"log2m"`
	Union    figure          `json:"union"`
	Exactly  []countFigure   `json:"exactly"`
	AtLeast  []countFigure   `json:"at_least"`
	OnlyHere []operandFigure `json:"only_here"`
	Regions  []regionFigure  `json:"regions,omitempty"`
	Complete bool            `json:"complete"`
	Unions   int             `json:"unions"`
	Method   string          `json:"method"`
	Warnings []string        `json:"warnings"`
}

func figureDTO(f sketch.Figure) figure {
	return figure{Estimate: finite(f.Estimate), RawEstimate: finite(f.RawEstimate), Error: finite(f.Error),
		Lower: finite(f.Lower), Upper: finite(f.Upper), Verdict: string(f.Verdict)}
}

func overlapDTO(labels []string, o sketch.Overlap) overlapResponse {
	out := overlapResponse{Sets: o.Sets, Log2m: o.Log2m, Union: figureDTO(o.Union), Complete: o.Complete, Unions: o.Unions, Method: string(o.Method),
		Exactly: []countFigure{}, AtLeast: []countFigure{}, OnlyHere: []operandFigure{}, Warnings: append([]string{}, o.Warnings...)}
	for i, f := range o.Exactly {
		out.Exactly = append(out.Exactly, countFigure{K: i + 1, figure: figureDTO(f)})
	}
	for i, f := range o.AtLeast {
		out.AtLeast = append(out.AtLeast, countFigure{K: i + 1, figure: figureDTO(f)})
	}
	for i, f := range o.OnlyHere {
		out.OnlyHere = append(out.OnlyHere, operandFigure{Operand: labels[i], figure: figureDTO(f)})
	}
	for _, r := range o.Regions {
		out.Regions = append(out.Regions, regionFigure{Operands: r.Members, figure: figureDTO(r.Figure)})
	}
	return out
}
