package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Frequency is the answer of a Count-Min point query.
type Frequency struct {
	Total   int64               `json:"total"` // N, the sum of all counts
	Results []FrequencyEstimate `json:"results"`
}

// FrequencyEstimate is one id's count: never below the true count, and
// with probability Confidence (1-δ) at most ErrorBound (ε·N) above it.
type FrequencyEstimate struct {
	ID         ID      `json:"id"`
	Estimate   int64   `json:"estimate"`
	ErrorBound float64 `json:"error_bound"`
	Confidence float64 `json:"confidence"`
}

// Frequency returns point estimates for ids (at most 10,000) from a
// Count-Min sketch (POST /v1/sketches/{name}/frequency).
func (c *Client) Frequency(ctx context.Context, name string, ids []ID) (*Frequency, error) {
	cl, err := jsonCall(http.MethodPost, sketchPath(name, "frequency"), struct {
		IDs []ID `json:"ids"`
	}{ids}, true, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return c.frequency(ctx, cl)
}

// FrequencyQuery is Frequency as a GET with the ids in the query string
// (GET /v1/sketches/{name}/frequency?id=…), which caches and proxies can
// see. The ids must be all integers or all texts.
func (c *Client) FrequencyQuery(ctx context.Context, name string, ids []ID) (*Frequency, error) {
	if len(ids) == 0 {
		return nil, errors.New("client: FrequencyQuery needs at least one id")
	}
	q := url.Values{}
	if err := addIDQuery(q, ids); err != nil {
		return nil, fmt.Errorf("%w; use Frequency for a mix", err)
	}
	return c.frequency(ctx, call{method: http.MethodGet, path: sketchPath(name, "frequency"), query: q, idempotent: true, ok: []int{http.StatusOK}})
}

func (c *Client) frequency(ctx context.Context, cl call) (*Frequency, error) {
	return into[Frequency](ctx, c, cl)
}

// TopItem is a heavy hitter and its estimated count.
type TopItem struct {
	ID       ID    `json:"id"`
	Estimate int64 `json:"estimate"`
}

// Top returns a Count-Min sketch's heaviest ids, heaviest first
// (GET /v1/sketches/{name}/top). k 0 asks for all the sketch keeps.
func (c *Client) Top(ctx context.Context, name string, k int) ([]TopItem, error) {
	var q url.Values
	if k != 0 {
		q = url.Values{"k": {strconv.Itoa(k)}}
	}
	r, err := c.do(ctx, call{method: http.MethodGet, path: sketchPath(name, "top"), query: q, idempotent: true, ok: []int{http.StatusOK}})
	if err != nil {
		return nil, err
	}
	var out struct {
		Items []TopItem `json:"items"`
	}
	return out.Items, decode(r, &out)
}

// Operand is a union or intersection operand: a sketch, the range
// [From, To) of a series (the union of its buckets there), or the union
// of every sketch whose name starts with Prefix, computed by the server
// where the sketches are stored. Names makes operands of sketch names.
type Operand struct {
	Sketch   string    // a sketch's name, or
	Series   string    // a series' name, with
	From, To time.Time // the range, or
	Prefix   string    // the start of the names of the sketches to unite
}

// Names returns sketch operands.
func Names(names ...string) []Operand {
	out := make([]Operand, len(names))
	for i, n := range names {
		out[i] = Operand{Sketch: n}
	}
	return out
}

// MarshalJSON writes a sketch's name as a JSON string and a series range
// as {"series","from","to"}.
func (o Operand) MarshalJSON() ([]byte, error) {
	switch {
	case o.Series != "" && o.Sketch != "":
		return nil, fmt.Errorf("client: operand names both the sketch %q and the series %q", o.Sketch, o.Series)
	case o.Prefix != "" && (o.Sketch != "" || o.Series != ""):
		return nil, fmt.Errorf("client: operand gives the prefix %q and a sketch or series", o.Prefix)
	case o.Prefix != "":
		return json.Marshal(struct {
			Prefix string `json:"prefix"`
		}{o.Prefix})
	case o.Series != "":
		return json.Marshal(struct {
			Series string    `json:"series"`
			From   time.Time `json:"from"`
			To     time.Time `json:"to"`
		}{o.Series, o.From, o.To})
	}
	return json.Marshal(o.Sketch)
}

// UnionRequest names the operands (1 to 1,000) to unite, or (Prefix,
// in their place) the start of the names of the sketches to unite, and
// optionally a sketch to store the union into (created or replaced; a
// write). UnionPrefix fills in Prefix.
type UnionRequest struct {
	Sketches []Operand `json:"sketches,omitempty"`
	Prefix   *string   `json:"prefix,omitempty"`
	Into     string    `json:"into,omitempty"`
	// Estimator, for an HLL union answered and not stored: "" or
	// "postgresql" (postgresql-hll's, the default), or "improved"
	// (Ertl's), each with its own std_error and bounds.
	Estimator string `json:"estimator,omitempty"`
}

// Union is the union of HLL sketches (Cardinality, StdError, Log2m,
// Regwidth, Representation) or of Count-Min sketches (Total, Width,
// Depth); Type says which.
type Union struct {
	Type string `json:"type"` // TypeHLL or TypeCMS

	Cardinality    float64 `json:"cardinality,omitempty"`
	StdError       float64 `json:"std_error,omitempty"` // relative
	Log2m          int     `json:"log2m,omitempty"`
	Regwidth       int     `json:"regwidth,omitempty"`
	Representation string  `json:"representation,omitempty"`

	Total int64 `json:"total,omitempty"`
	Width int   `json:"width,omitempty"`
	Depth int   `json:"depth,omitempty"`

	// HLL, theta and freq unions: bounds at two standard deviations.
	LowerBound float64 `json:"lower_bound,omitempty"`
	UpperBound float64 `json:"upper_bound,omitempty"`
	// Estimator is an HLL union's: "postgresql" or "improved".
	Estimator string  `json:"estimator,omitempty"`
	Retained  int     `json:"retained,omitempty"`
	Theta     float64 `json:"theta,omitempty"`

	// ds_hll unions: the union's lg_k (the smallest of its inputs') and
	// target type, with the bounds above and Cardinality, StdError and
	// Representation (the mode).
	LgK     int    `json:"lg_k,omitempty"`
	TgtType string `json:"tgt_type,omitempty"`

	// Bloom unions: the filter's shape and state.
	Bits              int     `json:"bits,omitempty"`
	Hashes            int     `json:"hashes,omitempty"`
	ExpectedItems     int64   `json:"expected_items,omitempty"`
	FPP               float64 `json:"fpp,omitempty"`
	BitsSet           int     `json:"bits_set,omitempty"`
	EstimatedItems    float64 `json:"estimated_items,omitempty"`
	FalsePositiveRate float64 `json:"false_positive_rate,omitempty"`
	SizeBytes         int     `json:"size_bytes,omitempty"`

	// KLL unions: the smallest k of the operands, the values counted and
	// the rank error.
	K            int      `json:"k,omitempty"`
	Items        string   `json:"items,omitempty"`
	N            int64    `json:"n,omitempty"`
	Min          *float64 `json:"min,omitempty"`
	Max          *float64 `json:"max,omitempty"`
	RankError    float64  `json:"rank_error,omitempty"`
	RankErrorPMF float64  `json:"rank_error_pmf,omitempty"`
	// zeta_hll unions: the union's precisions (the smallest of its
	// inputs'), the first input's value type and every input's values.
	Precision       int    `json:"precision,omitempty"`
	SparsePrecision int    `json:"sparse_precision,omitempty"`
	ValueType       string `json:"value_type,omitempty"`
	NumValues       int64  `json:"num_values,omitempty"`
	// airlift_hll unions: the first input's index bits.
	IndexBits int `json:"index_bits,omitempty"`

	Into string `json:"into,omitempty"`
	// Matched is how many sketches a UnionPrefix took.
	Matched int `json:"matched,omitempty"`
	// Warnings says where a series operand's covered range differs from
	// the one asked.
	Warnings []string `json:"warnings,omitempty"`
}

// Union estimates the union of sketches, storing it if req.Into is set
// (POST /v1/union). HLLs of different log2m are folded to the smallest.
// It is retried: storing the same union again gives the same sketch.
func (c *Client) Union(ctx context.Context, req UnionRequest) (*Union, error) {
	return c.union(ctx, req)
}

// UnionPrefix estimates the union of every sketch whose name starts with
// prefix ("" for every sketch), all of one kind, storing it as into
// unless into is "" (POST /v1/union with {"prefix"}). The server unions
// them where they are stored (on PostgreSQL and Citus, in the database)
// and leaves into out of the union, so storing a prefix's union under it
// can be repeated. Matched says how many sketches it took; more than
// 1,000,000 is an error (413). It is retried as Union is.
func (c *Client) UnionPrefix(ctx context.Context, prefix, into string) (*Union, error) {
	return c.union(ctx, UnionRequest{Prefix: &prefix, Into: into})
}

func (c *Client) union(ctx context.Context, req UnionRequest) (*Union, error) {
	cl, err := jsonCall(http.MethodPost, "/v1/union", req, true, http.StatusOK)
	if err != nil {
		return nil, err
	}
	cl.write = req.Into != ""
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	u := new(Union)
	if err := decode(r, u); err != nil {
		return nil, err
	}
	if u.Type == "" {
		u.Type = TypeHLL // the HLL answer has no type field
	}
	return u, nil
}

// Intersection methods.
const (
	MethodInclusionExclusion = "inclusion_exclusion"
	MethodMLE                = "mle"
)

// IntersectionRequest names 2 to 8 HLL operands (sketches or series
// ranges: "active last week and this week" is two ranges of one series);
// Method "" lets the server choose (docs/intersection.md).
type IntersectionRequest struct {
	Sketches []Operand `json:"sketches"`
	Method   string    `json:"method,omitempty"`
}

// Intersection is an intersection estimate with its error envelope and a
// verdict: read Verdict (or Reliable) and Warnings before trusting
// Estimate, and Spurious before reading any overlap into it.
type Intersection struct {
	Estimate    float64 `json:"estimate"` // RawEstimate clamped to [0, smallest set]
	RawEstimate float64 `json:"raw_estimate"`
	Error       float64 `json:"error"` // one standard deviation
	Lower       float64 `json:"lower"`
	Upper       float64 `json:"upper"`
	Spurious    bool    `json:"spurious"`
	Reliable    bool    `json:"reliable"` // Verdict is VerdictReliable or VerdictExact
	// Verdict is one of the Verdict constants; VerdictText says it for
	// people ("Not reliable. The estimate is above its noise, but …").
	Verdict          string   `json:"verdict"`
	VerdictText      string   `json:"verdict_text"`
	Warnings         []string `json:"warnings"`
	Terms            []Term   `json:"terms"`
	Overlap          float64  `json:"overlap"`
	CardinalityRatio float64  `json:"cardinality_ratio"`
	Log2m            int      `json:"log2m"`
	Method           string   `json:"method"` // inclusion_exclusion, mle or theta
	// Theta intersections: their lg_k, the sampled hashes in the
	// intersection and its theta.
	LgK      int     `json:"lg_k,omitempty"`
	Retained int     `json:"retained,omitempty"`
	Theta    float64 `json:"theta,omitempty"`
	// For two sketches only.
	Jaccard *Bounded `json:"jaccard,omitempty"`
	ANotB   *Bounded `json:"a_not_b,omitempty"`
	BNotA   *Bounded `json:"b_not_a,omitempty"`
	// Within names the smallest set when it lies inside every other as
	// far as the errors tell (the intersection is then its count); Same
	// is true when every set lies inside every other.
	Within string `json:"within,omitempty"`
	Same   bool   `json:"same,omitempty"`
}

// The verdicts of an answer built from sketches (docs/intersection.md,
// "Verdicts"), strongest first.
const (
	// VerdictExact: the count has no error.
	VerdictExact = "exact"
	// VerdictReliable: the bounds span at most half the estimate (and
	// for two HLL sketches the overlap and size ratio are inside the
	// cutoffs); such bounds held the truth in at least 95% of answers in
	// every cell of the simulation.
	VerdictReliable = "reliable"
	// VerdictNotReliable: above its noise, but the bounds are too wide or
	// the sets outside the trustworthy range; Warnings say which.
	VerdictNotReliable = "not_reliable"
	// VerdictSpurious: cannot be told from zero.
	VerdictSpurious = "spurious"
)

// Term is one union of inclusion-exclusion and its estimate.
type Term struct {
	Sketches    []string `json:"sketches"`
	Cardinality float64  `json:"cardinality"`
}

// Bounded is an estimate with one standard deviation and its bounds
// (theta answers: at two standard deviations; HLL answers: as the
// intersection's).
type Bounded struct {
	Estimate float64 `json:"estimate"`
	Error    float64 `json:"error"` // one standard deviation
	Lower    float64 `json:"lower,omitempty"`
	Upper    float64 `json:"upper,omitempty"`
}

// Intersection estimates the intersection of HLL sketches
// (POST /v1/intersection).
func (c *Client) Intersection(ctx context.Context, req IntersectionRequest) (*Intersection, error) {
	cl, err := jsonCall(http.MethodPost, "/v1/intersection", req, true, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return into[Intersection](ctx, c, cl)
}

// OverlapRequest counts how 2 to 64 HLL sketches or series ranges
// overlap.
type OverlapRequest struct {
	Sketches []Operand `json:"sketches"`
	// Method is, for two sketches, the intersection's estimator ("" for
	// its default, the MLE for hll); more take inclusion_exclusion.
	Method string `json:"method,omitempty"`
}

// Overlap is how N sets overlap (docs/intersection.md, "Users in several
// sets"): Exactly[k−1] counts the users in exactly k sets, AtLeast[k−1]
// those in at least k, OnlyHere[i] those of operand i in no other, and
// Regions (up to 8 operands) every region of the Venn diagram. When
// Complete is false the request's bound on unions cut the counts short
// (Warnings say where).
type Overlap struct {
	Sets     int             `json:"sets"`
	Log2m    int             `json:"log2m"`
	Union    OverlapCount    `json:"union"`
	Exactly  []OverlapK      `json:"exactly"`
	AtLeast  []OverlapK      `json:"at_least"`
	OnlyHere []OverlapOnly   `json:"only_here"`
	Regions  []OverlapRegion `json:"regions,omitempty"`
	Complete bool            `json:"complete"`
	Unions   int             `json:"unions"`
	// Method is the estimator every count comes from: for two sets the
	// intersection's, as Intersection answers with it.
	Method   string   `json:"method"`
	Warnings []string `json:"warnings"`
}

// OverlapCount is one count of an overlap with its one-sigma Error,
// bounds and Verdict (one of the Verdict constants).
type OverlapCount struct {
	Estimate    float64 `json:"estimate"`
	RawEstimate float64 `json:"raw_estimate"`
	Error       float64 `json:"error"`
	Lower       float64 `json:"lower"`
	Upper       float64 `json:"upper"`
	Verdict     string  `json:"verdict"`
}

// OverlapK counts the users in exactly (or at least) K sets.
type OverlapK struct {
	K int `json:"k"`
	OverlapCount
}

// OverlapOnly counts the users of Operand in no other operand.
type OverlapOnly struct {
	Operand string `json:"operand"`
	OverlapCount
}

// OverlapRegion counts the users in exactly Operands and no other.
type OverlapRegion struct {
	Operands []string `json:"operands"`
	OverlapCount
}

// Overlap counts the users in exactly k and in at least k of the
// operands, and in each one only (POST /v1/overlap).
func (c *Client) Overlap(ctx context.Context, req OverlapRequest) (*Overlap, error) {
	cl, err := jsonCall(http.MethodPost, "/v1/overlap", req, true, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return into[Overlap](ctx, c, cl)
}

// FoldRequest folds an HLL to Log2m (4..17, at most its own) and Regwidth
// (0 keeps the sketch's), in place or into another sketch.
type FoldRequest struct {
	Log2m    int    `json:"log2m"`
	Regwidth int    `json:"regwidth,omitempty"`
	Into     string `json:"into,omitempty"`
}

// Fold folds an HLL's registers down (POST /v1/sketches/{name}/fold) and
// returns the folded sketch. It is retried: folding to the same
// parameters again changes nothing.
func (c *Client) Fold(ctx context.Context, name string, req FoldRequest) (*Sketch, error) {
	cl, err := jsonCall(http.MethodPost, sketchPath(name, "fold"), req, true, http.StatusOK)
	if err != nil {
		return nil, err
	}
	cl.write = true
	return into[Sketch](ctx, c, cl)
}

// Interval is an estimate with its lower and upper bounds.
type Interval struct {
	Estimate float64 `json:"estimate"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
}

// FrequencyClass is one class of a frequency report: the users added
// exactly K times (K or more when OrMore) and their impressions.
type FrequencyClass struct {
	K           int      `json:"k"`
	OrMore      bool     `json:"or_more"`
	Users       Interval `json:"users"`
	Impressions Interval `json:"impressions"`
}

// FrequencyReport is a freq sketch's report: reach, impressions and the
// classes, with bounds at StdDevs standard deviations.
type FrequencyReport struct {
	StdDevs     int              `json:"std_devs"`
	Theta       float64          `json:"theta"`
	Retained    int              `json:"retained"`
	Reach       Interval         `json:"reach"`
	Impressions Interval         `json:"impressions"`
	Classes     []FrequencyClass `json:"classes"`
}

// FrequencyReport asks a freq sketch for its report with classes 1..max-1
// and "max or more" (max 0: the server's default, 10) and bounds at sd
// standard deviations (0: 2) (GET /v1/sketches/{name}/frequency_report).
func (c *Client) FrequencyReport(ctx context.Context, name string, max, sd int) (*FrequencyReport, error) {
	q := url.Values{}
	if max != 0 {
		q.Set("max", strconv.Itoa(max))
	}
	if sd != 0 {
		q.Set("sd", strconv.Itoa(sd))
	}
	return into[FrequencyReport](ctx, c, call{method: http.MethodGet, path: sketchPath(name, "frequency_report"), query: q, idempotent: true, ok: []int{http.StatusOK}})
}
