package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Series levels: one bucket per hour, day, ISO week (from Monday) or
// month, with edges in the series' time zone.
const (
	LevelHour  = "hour"
	LevelDay   = "day"
	LevelWeek  = "week"
	LevelMonth = "month"
)

// SeriesRequest is the body of CreateSeries: the bucket sketches' kind
// and parameters (as in CreateRequest; zero fields take the defaults),
// the time zone, the levels kept with their retention, and how late an
// add may come.
type SeriesRequest struct {
	Type string `json:"type,omitempty"` // TypeHLL (default) or TypeCMS

	Log2m        int     `json:"log2m,omitempty"`
	Regwidth     int     `json:"regwidth,omitempty"`
	Expthresh    *int64  `json:"expthresh,omitempty"`
	Sparse       *bool   `json:"sparse,omitempty"`
	Width        int     `json:"width,omitempty"`
	Depth        int     `json:"depth,omitempty"`
	Epsilon      float64 `json:"epsilon,omitempty"`
	Delta        float64 `json:"delta,omitempty"`
	Conservative bool    `json:"conservative,omitempty"`
	TopK         int     `json:"topk,omitempty"`
	LgK          int     `json:"lg_k,omitempty"`        // theta, freq and ds_hll series
	TgtType      string  `json:"tgt_type,omitempty"`    // ds_hll series
	DomainBits   int     `json:"domain_bits,omitempty"` // a Count-Min series over values
	// Bloom series: ExpectedItems and FPP, or Bits and Hashes.
	ExpectedItems int64   `json:"expected_items,omitempty"`
	FPP           float64 `json:"fpp,omitempty"`
	Bits          int     `json:"bits,omitempty"`
	Hashes        int     `json:"hashes,omitempty"`
	// KLL series: K and Items.
	K     int    `json:"k,omitempty"`
	Items string `json:"items,omitempty"`
	// zeta_hll series: Precision and SparsePrecision, as CreateRequest.
	Precision       int  `json:"precision,omitempty"`
	SparsePrecision *int `json:"sparse_precision,omitempty"`
	IndexBits       int  `json:"index_bits,omitempty"` // airlift_hll series

	// TZ is an IANA time zone name ("" is UTC).
	TZ string `json:"tz,omitempty"`
	// Levels maps a level to its retention in ISO 8601, such as
	// {LevelHour: "P14D", LevelDay: "P400D", LevelMonth: "P5Y"}. A
	// coarser level keeps at least as long as a finer one.
	Levels map[string]string `json:"levels"`
	// LateLimit is how late an add may come, in ISO 8601 ("" is P7D, at
	// most the finest level's retention).
	LateLimit string `json:"late_limit,omitempty"`
}

// Series describes a series and what each of its levels holds.
type Series struct {
	Name string `json:"name"`
	Type string `json:"type"` // TypeHLL or TypeCMS
	// Params are the bucket sketches' parameters, named as in
	// CreateRequest.
	Params    map[string]any `json:"params"`
	TZ        string         `json:"tz"`
	LateLimit string         `json:"late_limit"`
	Levels    []SeriesLevel  `json:"levels"`
	SizeBytes int            `json:"size_bytes"`
	CreatedAt time.Time      `json:"created_at"`
}

// SeriesLevel is what one level of a series holds. Oldest and Newest are
// the starts of its first and last buckets (zero when it holds none).
type SeriesLevel struct {
	Level     string    `json:"level"`
	Retention string    `json:"retention"`
	Buckets   int       `json:"buckets"`
	Oldest    time.Time `json:"oldest,omitzero"`
	Newest    time.Time `json:"newest,omitzero"`
	Bytes     int       `json:"bytes"`
}

// SeriesList is a page of series in name order.
type SeriesList struct {
	Series []Series `json:"series"`
	// Next is ListOptions.After for the next page; "" on the last page.
	Next string `json:"next,omitempty"`
}

// seriesPath returns /v1/series/{name}… with name escaped.
func seriesPath(name string, rest ...string) string {
	p := "/v1/series/" + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// CreateSeries creates the series name (PUT /v1/series/{name}); created
// is false when it existed with the same spec, which is not an error
// (another spec is IsConflict). It is retried, as Create is. A server
// whose storage keeps no series answers IsNotImplemented.
func (c *Client) CreateSeries(ctx context.Context, name string, req SeriesRequest) (s *Series, created bool, err error) {
	return create[Series](ctx, c, seriesPath(name), req)
}

// DescribeSeries returns the series' spec and what each level holds
// (GET /v1/series/{name}).
func (c *Client) DescribeSeries(ctx context.Context, name string) (*Series, error) {
	return into[Series](ctx, c, call{method: http.MethodGet, path: seriesPath(name), idempotent: true, ok: []int{http.StatusOK}})
}

// DeleteSeries removes the series and all its buckets
// (DELETE /v1/series/{name}). It is retried, as Delete is.
func (c *Client) DeleteSeries(ctx context.Context, name string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: seriesPath(name), idempotent: true, write: true, ok: []int{http.StatusNoContent}})
	return err
}

// SeriesChange is the body of ChangeSeries: a new late limit and new
// retentions of levels the series keeps, in ISO 8601 (empty fields stay
// as they are).
type SeriesChange struct {
	LateLimit string            `json:"late_limit,omitempty"`
	Levels    map[string]string `json:"levels,omitempty"`
}

// ChangeSeries changes the series' late limit and the retentions of the
// levels it keeps (PATCH /v1/series/{name}) and returns its new
// description. A change the series cannot take (a level it does not
// keep, a coarser level keeping less than a finer one) is IsInvalid and
// changes nothing. Adds and reads use the new definition at once; the
// buckets a shorter retention leaves out go at the next retention pass.
// It is retried: the same change twice is the change once.
func (c *Client) ChangeSeries(ctx context.Context, name string, req SeriesChange) (*Series, error) {
	cl, err := jsonCall(http.MethodPatch, seriesPath(name), req, true, http.StatusOK)
	if err != nil {
		return nil, err
	}
	cl.write = true
	return into[Series](ctx, c, cl)
}

// ListSeries returns a page of series (GET /v1/series).
func (c *Client) ListSeries(ctx context.Context, opts ListOptions) (*SeriesList, error) {
	return into[SeriesList](ctx, c, call{method: http.MethodGet, path: "/v1/series", query: listQuery(opts), idempotent: true, ok: []int{http.StatusOK}})
}

// Adding to a series takes the same bodies as adding to a sketch, stamped
// ts (the zero time is the server's now): one bucket per level that keeps
// ts is updated in one durable write. An add older than the series' late
// limit or more than 5 minutes ahead is IsUnprocessable. An add older
// than a finer level keeps (a late limit past the hour level's retention)
// goes to the coarser levels only: BackfillSeries says which. As with
// sketches, the HLL adds are retried and AddSeriesItems (Count-Min) is
// not.

// SeriesAdded is the answer of a series add: the ids accepted, the
// levels whose buckets took them (finest first) and a warning for each
// level skipped because ts is older than it keeps.
type SeriesAdded struct {
	Accepted int      `json:"accepted"`
	Levels   []string `json:"levels"`
	Warnings []string `json:"warnings"`
}

// BackfillSeries adds integer and text ids stamped ts to an HLL series,
// as AddSeriesIDs does, and returns the whole answer: which levels took
// them, for a ts older than some level keeps.
func (c *Client) BackfillSeries(ctx context.Context, name string, ts time.Time, ids []ID, opts ...CallOption) (*SeriesAdded, error) {
	body, err := idsBody(ids)
	if err != nil {
		return nil, err
	}
	return c.addSeriesAnswer(ctx, name, ts, "application/json", body, true, opts)
}

// AddSeriesInts adds integer ids to an HLL series as big-endian int64s.
func (c *Client) AddSeriesInts(ctx context.Context, name string, ts time.Time, ids []int64, opts ...CallOption) (int, error) {
	return c.addSeries(ctx, name, ts, "application/octet-stream", intsBody(ids), true, opts)
}

// AddSeriesStrings adds text ids to an HLL series.
func (c *Client) AddSeriesStrings(ctx context.Context, name string, ts time.Time, ids []string, opts ...CallOption) (int, error) {
	body, err := stringsBody(ids)
	if err != nil {
		return 0, err
	}
	return c.addSeries(ctx, name, ts, "application/json", body, true, opts)
}

// AddSeriesIDs adds integer and text ids, mixed, to an HLL series.
func (c *Client) AddSeriesIDs(ctx context.Context, name string, ts time.Time, ids []ID, opts ...CallOption) (int, error) {
	body, err := idsBody(ids)
	if err != nil {
		return 0, err
	}
	return c.addSeries(ctx, name, ts, "application/json", body, true, opts)
}

// AddSeriesHashes adds already hashed values to an HLL series.
func (c *Client) AddSeriesHashes(ctx context.Context, name string, ts time.Time, hashes []int64, opts ...CallOption) (int, error) {
	return c.addSeries(ctx, name, ts, "application/json", hashesBody(hashes), true, opts)
}

// AddSeriesItems adds counted ids to a Count-Min series; retried with its
// Idempotency-Key (without keys, only with WithUnsafeRetry).
func (c *Client) AddSeriesItems(ctx context.Context, name string, ts time.Time, items []Item, opts ...CallOption) (int, error) {
	body, err := itemsBody(items)
	if err != nil {
		return 0, err
	}
	return c.addSeries(ctx, name, ts, "application/json", body, false, opts)
}

var errSeriesCreate = errors.New("client: a series add cannot create the series; use CreateSeries")

func (c *Client) addSeries(ctx context.Context, name string, ts time.Time, contentType string, body []byte, idempotent bool, opts []CallOption) (int, error) {
	a, err := c.addSeriesAnswer(ctx, name, ts, contentType, body, idempotent, opts)
	if err != nil {
		return 0, err
	}
	return a.Accepted, nil
}

func (c *Client) addSeriesAnswer(ctx context.Context, name string, ts time.Time, contentType string, body []byte, idempotent bool, opts []CallOption) (*SeriesAdded, error) {
	cc := callOptions(opts)
	if cc.create {
		return nil, errSeriesCreate
	}
	var q url.Values
	if !ts.IsZero() {
		q = url.Values{"ts": {ts.Format(time.RFC3339Nano)}}
	}
	return into[SeriesAdded](ctx, c, call{
		method: http.MethodPost, path: seriesPath(name, "add"), query: q, body: body, contentType: contentType,
		idempotent: idempotent || cc.retryUnsafe, write: true, ok: []int{http.StatusOK},
	})
}

// Range is the part of a series a query covered: From and To may differ
// from the range asked for (an edge inside the finest bucket kept there,
// expired data), and Warnings then says so. Plan is how it was answered:
// the fewest buckets that tile the range, as runs of one level each
// (months inside, days and hours towards the edges). Buckets lists them
// one by one, only when asked (SeriesCountBuckets).
type Range struct {
	From     time.Time   `json:"from"`
	To       time.Time   `json:"to"`
	Plan     []PlanRun   `json:"plan"`
	Buckets  []BucketRef `json:"buckets,omitempty"`
	Warnings []string    `json:"warnings"`
}

// PlanRun is Count consecutive buckets of one level: the first starts at
// First, the last at Last.
type PlanRun struct {
	Level string    `json:"level"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	Count int       `json:"count"`
}

// BucketCount is how many buckets the plan has.
func (r Range) BucketCount() int {
	n := 0
	for _, p := range r.Plan {
		n += p.Count
	}
	return n
}

// BucketRef names a bucket by its level and start.
type BucketRef struct {
	Level string    `json:"level"`
	Start time.Time `json:"start"`
}

// SeriesCount is a count over a range: the distinct count with its
// relative error (HLL), or the total and the asked ids' frequencies
// (Count-Min).
type SeriesCount struct {
	Range
	Cardinality float64             `json:"cardinality,omitempty"`
	StdError    float64             `json:"std_error,omitempty"`
	LowerBound  float64             `json:"lower_bound,omitempty"` // hll, theta and freq: two standard deviations
	UpperBound  float64             `json:"upper_bound,omitempty"`
	Estimator   string              `json:"estimator,omitempty"` // hll: the estimator behind the figures
	Total       int64               `json:"total,omitempty"`
	Results     []FrequencyEstimate `json:"results,omitempty"`
	// Bloom describes the union of a Bloom series' buckets, KLL that of
	// a KLL series'.
	Bloom *BloomState `json:"bloom,omitempty"`
	KLL   *KLLState   `json:"kll,omitempty"`
}

// rangeQuery is ?from=&to=.
func rangeQuery(from, to time.Time) url.Values {
	return url.Values{"from": {from.Format(time.RFC3339Nano)}, "to": {to.Format(time.RFC3339Nano)}}
}

// SeriesCount counts [from, to) (GET /v1/series/{name}/count); for a
// Count-Min series, ids (all integers or all texts) are estimated too. A
// range whose plan passes the server's -max-series-buckets is
// unprocessable (IsUnprocessable), its detail saying how to narrow.
func (c *Client) SeriesCount(ctx context.Context, name string, from, to time.Time, ids ...ID) (*SeriesCount, error) {
	return c.seriesCount(ctx, name, from, to, false, ids)
}

// SeriesCountBuckets is SeriesCount with every bucket of the plan listed
// in Buckets (?buckets=true): unprocessable when there are more than the
// server's -max-series-points.
func (c *Client) SeriesCountBuckets(ctx context.Context, name string, from, to time.Time, ids ...ID) (*SeriesCount, error) {
	return c.seriesCount(ctx, name, from, to, true, ids)
}

func (c *Client) seriesCount(ctx context.Context, name string, from, to time.Time, list bool, ids []ID) (*SeriesCount, error) {
	q := rangeQuery(from, to)
	if err := addIDQuery(q, ids); err != nil {
		return nil, err
	}
	if list {
		q.Set("buckets", "true")
	}
	return into[SeriesCount](ctx, c, call{method: http.MethodGet, path: seriesPath(name, "count"), query: q, idempotent: true, ok: []int{http.StatusOK}})
}

// addIDQuery adds ids as repeated ?id= (with id_type=text for text ids);
// they must be of one type.
func addIDQuery(q url.Values, ids []ID) error {
	if len(ids) == 0 {
		return nil
	}
	text := ids[0].IsText()
	for _, id := range ids {
		if id.IsText() != text {
			return errors.New("client: ids in a query must be all integers or all texts")
		}
		if text {
			q.Add("id", id.Text())
		} else {
			q.Add("id", strconv.FormatInt(id.Int(), 10))
		}
	}
	if text {
		q.Set("id_type", "text")
	}
	return nil
}

// TimeseriesRequest asks for one point per Step from From to To, each
// the union over the trailing Window (ISO 8601 durations; "" takes
// P1D for Step and Step for Window): Step P1D with Window P30D is a MAU
// line.
type TimeseriesRequest struct {
	From, To     time.Time
	Step, Window string
	// Q asks a KLL series (or a Count-Min over a value domain) for these
	// quantiles of each window: rolling p50 and p99 lines.
	Q []float64
	// Estimator, for an HLL series: "" or "postgresql" (the default), or
	// "improved" (Ertl's).
	Estimator string
}

// Timeseries is a rolling line and the level whose buckets made it.
type Timeseries struct {
	Step     string            `json:"step"`
	Window   string            `json:"window"`
	Level    string            `json:"level"`
	Points   []TimeseriesPoint `json:"points"`
	Warnings []string          `json:"warnings"`
}

// TimeseriesPoint is the union over [WindowFrom, End) for the step
// [Start, End): a distinct count with its relative error (HLL) or a total
// (Count-Min).
type TimeseriesPoint struct {
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	WindowFrom  time.Time `json:"window_from"`
	Cardinality float64   `json:"cardinality,omitempty"`
	StdError    float64   `json:"std_error,omitempty"`
	LowerBound  float64   `json:"lower_bound,omitempty"` // hll, theta and freq series
	UpperBound  float64   `json:"upper_bound,omitempty"`
	Estimator   string    `json:"estimator,omitempty"` // hll: the estimator behind the figures
	Total       int64     `json:"total,omitempty"`
	// FalsePositiveRate is a Bloom series point's: its window's union's
	// rate (Cardinality is its estimated items).
	FalsePositiveRate float64 `json:"false_positive_rate,omitempty"`
	// Quantiles (with TimeseriesRequest.Q) are the window's values at
	// those fractions, within RankError of their ranks.
	Quantiles []QuantileValue `json:"quantiles,omitempty"`
	RankError float64         `json:"rank_error,omitempty"`
}

// SeriesTimeseries returns a rolling line (DAU, WAU, MAU)
// (GET /v1/series/{name}/timeseries).
func (c *Client) SeriesTimeseries(ctx context.Context, name string, req TimeseriesRequest) (*Timeseries, error) {
	q := rangeQuery(req.From, req.To)
	if req.Step != "" {
		q.Set("step", req.Step)
	}
	if req.Window != "" {
		q.Set("window", req.Window)
	}
	if len(req.Q) > 0 {
		floatsQuery(q, "q", req.Q)
	}
	if req.Estimator != "" {
		q.Set("estimator", req.Estimator)
	}
	return into[Timeseries](ctx, c, call{method: http.MethodGet, path: seriesPath(name, "timeseries"), query: q, idempotent: true, ok: []int{http.StatusOK}})
}

// SeriesTop is a Count-Min series' heaviest ids over a range.
type SeriesTop struct {
	Range
	Items []TopItem `json:"items"`
}

// SeriesTop returns the heaviest ids of a Count-Min series over
// [from, to), heaviest first (GET /v1/series/{name}/top); k 0 asks for
// all the sketches keep.
func (c *Client) SeriesTop(ctx context.Context, name string, from, to time.Time, k int) (*SeriesTop, error) {
	q := rangeQuery(from, to)
	if k != 0 {
		q.Set("k", strconv.Itoa(k))
	}
	return into[SeriesTop](ctx, c, call{method: http.MethodGet, path: seriesPath(name, "top"), query: q, idempotent: true, ok: []int{http.StatusOK}})
}

// SeriesFrequencyReport is a freq series' frequency report over a range.
type SeriesFrequencyReport struct {
	Range
	FrequencyReport
}

// SeriesFrequencyReport reports [from, to) of a freq series, its buckets'
// counts summed per user (GET /v1/series/{name}/frequency_report); max
// and sd 0 take the server's defaults (10 and 2).
func (c *Client) SeriesFrequencyReport(ctx context.Context, name string, from, to time.Time, max, sd int) (*SeriesFrequencyReport, error) {
	q := rangeQuery(from, to)
	if max != 0 {
		q.Set("max", strconv.Itoa(max))
	}
	if sd != 0 {
		q.Set("sd", strconv.Itoa(sd))
	}
	return into[SeriesFrequencyReport](ctx, c, call{method: http.MethodGet, path: seriesPath(name, "frequency_report"), query: q, idempotent: true, ok: []int{http.StatusOK}})
}

// SeriesRaw is the union of a series' range in the storage format.
type SeriesRaw struct {
	Data     []byte    // bytes, or `\x…` text with hex
	From, To time.Time // the range covered
	Buckets  int       // how many buckets it united
	Plan     []PlanRun // the buckets as runs, as Range.Plan
}

// SeriesRaw downloads the union of [from, to) in the kind's format (GET
// /v1/series/{name}/raw); hex asks for PostgreSQL's `\x…` text.
func (c *Client) SeriesRaw(ctx context.Context, name string, from, to time.Time, hex bool) (*SeriesRaw, error) {
	return c.SeriesRawWith(ctx, name, from, to, SeriesRawOptions{Hex: hex})
}

// SeriesRawOptions shapes a series download, as RawOptions a sketch's.
type SeriesRawOptions struct {
	Hex        bool   // PostgreSQL's `\x…` text
	Layout     string // a freq series' summary layout: "java" or "cpp"
	Compressed bool   // a theta series' compressed form
}

// SeriesRawWith is SeriesRaw with the download's options.
func (c *Client) SeriesRawWith(ctx context.Context, name string, from, to time.Time, opts SeriesRawOptions) (*SeriesRaw, error) {
	q := rangeQuery(from, to)
	if opts.Hex {
		q.Set("format", "hex")
	}
	if opts.Layout != "" {
		q.Set("layout", opts.Layout)
	}
	if opts.Compressed {
		q.Set("compressed", "true")
	}
	r, err := c.do(ctx, call{method: http.MethodGet, path: seriesPath(name, "raw"), query: q, idempotent: true, ok: []int{http.StatusOK}})
	if err != nil {
		return nil, err
	}
	out := &SeriesRaw{Data: r.body}
	var errs []error
	if v := r.header.Get("Sketchd-From"); v != "" {
		out.From, err = time.Parse(time.RFC3339Nano, v)
		errs = append(errs, err)
	}
	if v := r.header.Get("Sketchd-To"); v != "" {
		out.To, err = time.Parse(time.RFC3339Nano, v)
		errs = append(errs, err)
	}
	if v := r.header.Get("Sketchd-Buckets"); v != "" {
		out.Buckets, err = strconv.Atoi(v)
		errs = append(errs, err)
	}
	if v := r.header.Get("Sketchd-Plan"); v != "" {
		out.Plan, err = parsePlan(v)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("client: the answer's range headers: %w", err)
	}
	return out, nil
}

// parsePlan reads a Sketchd-Plan header: "level first last count" per
// run, joined by ", ".
func parsePlan(v string) ([]PlanRun, error) {
	var out []PlanRun
	for _, run := range strings.Split(v, ", ") {
		f := strings.Fields(run)
		if len(f) != 4 {
			return nil, fmt.Errorf("Sketchd-Plan run %q: want level, first, last and count", run)
		}
		first, err1 := time.Parse(time.RFC3339Nano, f[1])
		last, err2 := time.Parse(time.RFC3339Nano, f[2])
		n, err3 := strconv.Atoi(f[3])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("Sketchd-Plan run %q: %w", run, err)
		}
		if n < 1 {
			return nil, fmt.Errorf("Sketchd-Plan run %q: a count below 1", run)
		}
		if l := f[0]; l != LevelHour && l != LevelDay && l != LevelWeek && l != LevelMonth {
			return nil, fmt.Errorf("Sketchd-Plan run %q: unknown level", run)
		}
		out = append(out, PlanRun{Level: f[0], First: first, Last: last, Count: n})
	}
	return out, nil
}
