package client_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/sketchd/sketchd/api"
	"github.com/sketchd/sketchd/client"
)

// operation is the client's counterpart of one (method, path) of
// api/openapi.yaml.
type operation struct {
	// methods are the *client.Client methods that call it.
	methods []string
	// params are the query and header parameters the client sends;
	// notSent the spec's others, each with the reason.
	params  []string
	notSent map[string]string
	// request and response are the Go types of the application/json
	// request body and success answer (nil: none, or not JSON).
	request, response reflect.Type
}

var (
	tAccepted = reflect.TypeFor[struct {
		Accepted int `json:"accepted"`
	}]()
	tSketch   = reflect.TypeFor[client.Sketch]()
	tSeries   = reflect.TypeFor[client.Series]()
	tImported = reflect.TypeFor[client.BucketsImported]()
	tAddBody  = reflect.TypeFor[struct {
		IDs    []client.ID   `json:"ids"`
		Hashes []int64       `json:"hashes"`
		Items  []client.Item `json:"items"`
		Values []float64     `json:"values"`
	}]()
)

// compat maps every route of api/openapi.yaml to the client. Adding a
// route to the spec fails TestCompatibility until it is added here, with
// the client methods that call it; a method of *client.Client missing
// here fails it too.
var compat = map[string]operation{
	"GET /v1/backup": {methods: []string{"Backup"}},
	"GET /v1/sketches": {methods: []string{"List", "All", "ListParquet"}, params: []string{"prefix", "after", "limit", "format"},
		response: reflect.TypeFor[client.SketchList]()},
	"PUT /v1/sketches/{name}":    {params: []string{"Idempotency-Key"}, methods: []string{"Create"}, request: reflect.TypeFor[client.CreateRequest](), response: tSketch},
	"GET /v1/sketches/{name}":    {methods: []string{"Describe", "DescribeWith"}, params: []string{"estimator"}, response: tSketch},
	"DELETE /v1/sketches/{name}": {params: []string{"Idempotency-Key"}, methods: []string{"Delete"}},
	"PATCH /v1/sketches/{name}": {params: []string{"Idempotency-Key"}, methods: []string{"SetExpiry"},
		// SetExpiry's body: one of the two, a value or null.
		request: reflect.TypeFor[struct {
			ExpireAfter *string    `json:"expire_after"`
			ExpireAt    *time.Time `json:"expire_at"`
		}](),
		response: tSketch},
	"POST /v1/sketches/{name}/add": {
		methods: []string{"AddInts", "AddStrings", "AddIDs", "AddHashes", "AddItems", "AddNew", "AddValues", "AddLongs"},
		params:  []string{"Idempotency-Key", "create", "report"},
		notSent: map[string]string{"id_type": "only for text/plain and NDJSON bodies; the client sends octet-stream and JSON",
			"byte_order": "the client sends big-endian octets"},
		request:  tAddBody,
		response: reflect.TypeFor[client.Fresh](),
	},
	"POST /v1/sketches/{name}/check": {methods: []string{"Check"},
		notSent:  map[string]string{"id_type": "only for text/plain and NDJSON bodies; the client sends JSON"},
		request:  tAddBody,
		response: reflect.TypeFor[client.Check]()},
	"GET /v1/sketches/{name}/range": {methods: []string{"RangeCount"}, params: []string{"lo", "hi"},
		response: reflect.TypeFor[client.RangeCount]()},
	"GET /v1/sketches/{name}/quantile": {methods: []string{"Quantiles"}, params: []string{"q"},
		notSent:  map[string]string{"inclusive": "the client asks the libraries' default, inclusive"},
		response: reflect.TypeFor[client.QuantileAnswer]()},
	"GET /v1/sketches/{name}/rank": {methods: []string{"Rank"}, params: []string{"value"},
		notSent:  map[string]string{"inclusive": "the client asks the libraries' default, inclusive"},
		response: reflect.TypeFor[client.RankAnswer]()},
	"GET /v1/sketches/{name}/cdf": {methods: []string{"CDF"}, params: []string{"split"},
		notSent:  map[string]string{"inclusive": "the client asks the libraries' default, inclusive"},
		response: reflect.TypeFor[client.Distribution]()},
	"GET /v1/sketches/{name}/pmf": {methods: []string{"PMF"}, params: []string{"split"},
		notSent:  map[string]string{"inclusive": "the client asks the libraries' default, inclusive"},
		response: reflect.TypeFor[client.Distribution]()},
	"GET /v1/series/{name}/rank": {methods: []string{"SeriesRank"}, params: []string{"from", "to", "value"},
		notSent:  map[string]string{"buckets": "Range.Plan describes the buckets; SeriesCountBuckets lists them", "inclusive": "the client asks the libraries' default, inclusive"},
		response: reflect.TypeFor[client.SeriesRanks]()},
	"GET /v1/series/{name}/cdf": {methods: []string{"SeriesCDF"}, params: []string{"from", "to", "split"},
		notSent:  map[string]string{"buckets": "Range.Plan describes the buckets; SeriesCountBuckets lists them", "inclusive": "the client asks the libraries' default, inclusive"},
		response: reflect.TypeFor[client.SeriesDistribution]()},
	"GET /v1/series/{name}/pmf": {methods: []string{"SeriesPMF"}, params: []string{"from", "to", "split"},
		notSent:  map[string]string{"buckets": "Range.Plan describes the buckets; SeriesCountBuckets lists them", "inclusive": "the client asks the libraries' default, inclusive"},
		response: reflect.TypeFor[client.SeriesDistribution]()},
	"GET /v1/series/{name}/range": {methods: []string{"SeriesRangeCount"}, params: []string{"from", "to", "lo", "hi"},
		notSent:  map[string]string{"buckets": "Range.Plan describes the buckets; SeriesCountBuckets lists them"},
		response: reflect.TypeFor[client.SeriesRangeCount]()},
	"GET /v1/series/{name}/quantile": {methods: []string{"SeriesQuantiles"}, params: []string{"from", "to", "q"},
		notSent:  map[string]string{"buckets": "Range.Plan describes the buckets; SeriesCountBuckets lists them", "inclusive": "the client asks the libraries' default, inclusive"},
		response: reflect.TypeFor[client.SeriesQuantiles]()},
	"POST /v1/series/{name}/check": {methods: []string{"SeriesCheck"}, params: []string{"from", "to"},
		notSent:  map[string]string{"buckets": "Range.Plan describes the buckets; SeriesCountBuckets lists them", "id_type": "only for text/plain and NDJSON bodies; the client sends JSON"},
		request:  tAddBody,
		response: reflect.TypeFor[client.SeriesCheck]()},
	"POST /v1/events": {methods: []string{"AddEvents"}, params: []string{"Idempotency-Key", "create"},
		request: reflect.TypeFor[struct {
			Events []client.Event `json:"events"`
		}](),
		response: tAccepted},
	"POST /v1/sketches/{name}/frequency": {methods: []string{"Frequency"},
		request: reflect.TypeFor[struct {
			IDs []client.ID `json:"ids"`
		}](),
		response: reflect.TypeFor[client.Frequency]()},
	"GET /v1/sketches/{name}/frequency": {methods: []string{"FrequencyQuery"}, params: []string{"id", "id_type"},
		response: reflect.TypeFor[client.Frequency]()},
	"GET /v1/sketches/{name}/frequency_report": {methods: []string{"FrequencyReport"}, params: []string{"max", "sd"},
		response: reflect.TypeFor[client.FrequencyReport]()},
	"GET /v1/sketches/{name}/top": {methods: []string{"Top"}, params: []string{"k"},
		response: reflect.TypeFor[struct {
			Items []client.TopItem `json:"items"`
		}]()},
	"POST /v1/union": {params: []string{"Idempotency-Key"}, methods: []string{"Union", "UnionPrefix"}, request: reflect.TypeFor[client.UnionRequest](),
		response: reflect.TypeFor[client.Union]()},
	"POST /v1/intersection": {methods: []string{"Intersection"}, request: reflect.TypeFor[client.IntersectionRequest](),
		response: reflect.TypeFor[client.Intersection]()},
	"POST /v1/overlap": {methods: []string{"Overlap"}, request: reflect.TypeFor[client.OverlapRequest](),
		response: reflect.TypeFor[client.Overlap]()},
	"POST /v1/rank": {methods: []string{"RankOverlap"}, request: reflect.TypeFor[client.RankOverlapRequest](),
		response: reflect.TypeFor[client.Ranking]()},
	"POST /v1/sketches/{name}/fold": {params: []string{"Idempotency-Key"}, methods: []string{"Fold"}, request: reflect.TypeFor[client.FoldRequest](), response: tSketch},
	"GET /v1/sketches/{name}/raw":   {methods: []string{"Raw"}, params: []string{"format", "log2m", "layout", "compressed", "If-None-Match"}},
	"PUT /v1/sketches/{name}/raw":   {methods: []string{"PutRaw"}, params: []string{"Idempotency-Key", "format", "items"}, response: tSketch},
	"POST /v1/sketches/{name}/raw":  {methods: []string{"MergeRaw"}, params: []string{"Idempotency-Key", "fold", "format", "items"}, response: tSketch},
	"GET /v1/series": {methods: []string{"ListSeries"}, params: []string{"prefix", "after", "limit"},
		response: reflect.TypeFor[client.SeriesList]()},
	"PUT /v1/series/{name}":    {params: []string{"Idempotency-Key"}, methods: []string{"CreateSeries"}, request: reflect.TypeFor[client.SeriesRequest](), response: tSeries},
	"GET /v1/series/{name}":    {methods: []string{"DescribeSeries"}, response: tSeries},
	"DELETE /v1/series/{name}": {params: []string{"Idempotency-Key"}, methods: []string{"DeleteSeries"}},
	"PATCH /v1/series/{name}":  {params: []string{"Idempotency-Key"}, methods: []string{"ChangeSeries"}, request: reflect.TypeFor[client.SeriesChange](), response: tSeries},
	"POST /v1/series/{name}/add": {
		methods: []string{"AddSeriesInts", "AddSeriesStrings", "AddSeriesIDs", "AddSeriesHashes", "AddSeriesItems", "AddSeriesValues", "AddSeriesLongs", "BackfillSeries"},
		params:  []string{"Idempotency-Key", "ts"},
		notSent: map[string]string{"id_type": "only for text/plain and NDJSON bodies; the client sends octet-stream and JSON",
			"byte_order": "the client sends big-endian octets"},
		request:  tAddBody,
		response: reflect.TypeFor[client.SeriesAdded](),
	},
	"PUT /v1/series/{name}/buckets":                  {methods: []string{"ImportBuckets"}, params: []string{"Idempotency-Key", "format", "fold"}, response: tImported},
	"POST /v1/series/{name}/buckets":                 {methods: []string{"MergeBuckets"}, params: []string{"Idempotency-Key", "format", "fold"}, response: tImported},
	"PUT /v1/series/{name}/buckets/{level}/{start}":  {methods: []string{"PutBucket"}, params: []string{"Idempotency-Key", "format", "fold"}, response: tImported},
	"POST /v1/series/{name}/buckets/{level}/{start}": {methods: []string{"MergeBucket"}, params: []string{"Idempotency-Key", "format", "fold"}, response: tImported},
	"POST /v1/retention":                             {methods: []string{"Retention"}, request: reflect.TypeFor[client.RetentionRequest](), response: reflect.TypeFor[client.Retention]()},
	"POST /v1/funnel":                                {methods: []string{"Funnel"}, request: reflect.TypeFor[client.FunnelRequest](), response: reflect.TypeFor[client.Funnel]()},
	"GET /v1/series/{name}/count": {methods: []string{"SeriesCount", "SeriesCountBuckets"}, params: []string{"from", "to", "id", "id_type", "buckets"},
		notSent:  map[string]string{"estimator": "a range's improved estimate is asked as a timeseries of one point (TimeseriesRequest.Estimator)"},
		response: reflect.TypeFor[client.SeriesCount]()},
	"GET /v1/series/{name}/timeseries": {methods: []string{"SeriesTimeseries"}, params: []string{"from", "to", "step", "window", "q", "estimator"},
		response: reflect.TypeFor[client.Timeseries]()},
	"GET /v1/series/{name}/top": {methods: []string{"SeriesTop"}, params: []string{"from", "to", "k"},
		notSent:  map[string]string{"buckets": "Range.Plan describes the buckets; SeriesCountBuckets lists them"},
		response: reflect.TypeFor[client.SeriesTop]()},
	"GET /v1/series/{name}/raw": {methods: []string{"SeriesRaw", "SeriesRawWith"}, params: []string{"from", "to", "format", "layout", "compressed"}},
	"GET /v1/series/{name}/frequency_report": {methods: []string{"SeriesFrequencyReport"}, params: []string{"from", "to", "max", "sd"},
		notSent:  map[string]string{"buckets": "Range.Plan describes the buckets; SeriesCountBuckets lists them"},
		response: reflect.TypeFor[client.SeriesFrequencyReport]()},
	"GET /metrics": {methods: []string{"Metrics"}},
	"GET /healthz": {methods: []string{"Health"}, response: reflect.TypeFor[struct {
		Status string `json:"status"`
	}]()},
	"GET /readyz": {methods: []string{"Ready"}, response: reflect.TypeFor[struct {
		Status string `json:"status"`
	}]()},
	"GET /openapi.yaml": {methods: []string{"OpenAPI"}},
}

// forPeople lists the operations that serve the console to browsers,
// with the reason a product backend has no use for them.
var forPeople = map[string]string{
	"GET /":               "the console's page",
	"GET /console/{file}": "the console's scripts, styles and icon",
}

// TestCompatibility checks compat against api/openapi.yaml both ways:
// every operation has client methods, every client method an operation,
// the parameters are accounted for, and the JSON bodies' Go types have
// exactly the spec's fields, recursively.
func TestCompatibility(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec())
	if err != nil {
		t.Fatal(err)
	}
	inSpec := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := method + " " + path
			inSpec[key] = true
			if _, ok := forPeople[key]; ok {
				continue
			}
			c, ok := compat[key]
			if !ok || len(c.methods) == 0 {
				t.Errorf("%s (%s) has no client counterpart", key, op.OperationID)
				continue
			}
			checkParams(t, key, append(item.Parameters, op.Parameters...), c)
			if c.request != nil {
				if op.RequestBody == nil || op.RequestBody.Value.Content.Get("application/json") == nil {
					t.Errorf("%s: the spec has no JSON request body", key)
				} else {
					checkSchema(t, key+" request", op.RequestBody.Value.Content.Get("application/json").Schema, c.request)
				}
			}
			if c.response != nil {
				checkSchema(t, key+" answer", successJSON(t, key, op), c.response)
			}
		}
	}
	for key := range compat {
		if !inSpec[key] {
			t.Errorf("compat has %s, which api/openapi.yaml does not", key)
		}
	}

	// Every method of *Client calls a route, and every listed method
	// exists.
	listed := map[string]bool{}
	for key, c := range compat {
		for _, m := range c.methods {
			if _, ok := reflect.TypeFor[*client.Client]().MethodByName(m); !ok {
				t.Errorf("compat lists %s for %s, but *client.Client has no such method", m, key)
			}
			listed[m] = true
		}
	}
	ct := reflect.TypeFor[*client.Client]()
	for i := range ct.NumMethod() {
		if m := ct.Method(i).Name; !listed[m] {
			t.Errorf("*client.Client has %s, which no route in compat lists", m)
		}
	}
}

// successJSON returns the JSON schema of op's 2xx answer.
func successJSON(t *testing.T, key string, op *openapi3.Operation) *openapi3.SchemaRef {
	for _, code := range []int{200, 201} {
		if r := op.Responses.Status(code); r != nil && r.Value != nil {
			if mt := r.Value.Content.Get("application/json"); mt != nil {
				return mt.Schema
			}
		}
	}
	t.Errorf("%s: the spec has no JSON success answer", key)
	return nil
}

func checkParams(t *testing.T, key string, params openapi3.Parameters, c operation) {
	t.Helper()
	var spec []string
	for _, p := range params {
		if p.Value.In == "path" {
			continue
		}
		spec = append(spec, p.Value.Name)
	}
	var ours []string
	ours = append(ours, c.params...)
	for p := range c.notSent {
		ours = append(ours, p)
	}
	sort.Strings(spec)
	sort.Strings(ours)
	if !slices.Equal(spec, ours) {
		t.Errorf("%s: the spec's parameters are %v; the client sends %v and leaves out %v", key, spec, c.params, c.notSent)
	}
}

// props collects a schema's properties, through oneOf, anyOf and allOf
// (the client decodes every alternative into one type).
func props(s *openapi3.Schema, into map[string]*openapi3.SchemaRef) {
	for name, p := range s.Properties {
		into[name] = p
	}
	for _, group := range []openapi3.SchemaRefs{s.OneOf, s.AnyOf, s.AllOf} {
		for _, alt := range group {
			props(alt.Value, into)
		}
	}
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// checkSchema compares the JSON fields of Go type typ with the schema's
// properties, both ways, and recurses into objects and arrays of them.
func checkSchema(t *testing.T, where string, ref *openapi3.SchemaRef, typ reflect.Type) {
	t.Helper()
	if ref == nil {
		return
	}
	s := ref.Value
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
		if typ.Kind() == reflect.Slice && s.Items != nil {
			s = s.Items.Value
		}
		typ = typ.Elem()
	}
	want := map[string]*openapi3.SchemaRef{}
	props(s, want)
	if typ.Implements(jsonMarshaler) || typ == reflect.TypeFor[time.Time]() || typ.Kind() == reflect.Map {
		return
	}
	if typ.Kind() != reflect.Struct {
		if len(want) > 0 {
			t.Errorf("%s: the spec allows an object here, which %v cannot carry", where, typ)
		}
		return
	}
	got := map[string]reflect.Type{}
	jsonFields(typ, got)
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("%s: the spec's field %q is missing from %v", where, name, typ)
		}
	}
	for name, ft := range got {
		p, ok := want[name]
		if !ok {
			t.Errorf("%s: %v has field %q, which the spec does not", where, typ, name)
			continue
		}
		checkSchema(t, where+"."+name, p, ft)
	}
}

// jsonFields collects the JSON names of typ's fields, those of embedded
// structs included (encoding/json flattens them).
func jsonFields(typ reflect.Type, into map[string]reflect.Type) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct {
			jsonFields(f.Type, into)
			continue
		}
		if name == "" {
			name = f.Name
		}
		into[name] = f.Type
	}
}
