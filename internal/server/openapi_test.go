package server

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
	dto "github.com/prometheus/client_model/go"

	"github.com/sketchd/sketchd/api"
	"github.com/sketchd/sketchd/internal/sketch"
)

// specIndex is api/openapi.yaml, loaded and validated once for the
// package's tests (it is never modified after loading).
type specIndex struct {
	doc *openapi3.T
	err error
}

var loadedSpec = sync.OnceValue(func() *specIndex {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.Spec())
	return &specIndex{doc: doc, err: err}
})

// loadSpec returns the parsed spec or fails the test.
func loadSpec(tb testing.TB) *specIndex {
	tb.Helper()
	sp := loadedSpec()
	if sp.err != nil {
		tb.Fatalf("loading api/openapi.yaml: %v", sp.err)
	}
	return sp
}

// operation returns the spec's operation for a chi route pattern and a
// method, nil if the spec has none.
func (sp *specIndex) operation(route, method string) *openapi3.Operation {
	item := sp.doc.Paths.Value(route)
	if item == nil {
		return nil
	}
	return item.GetOperation(method)
}

// checkResponse validates an answer against the spec: its status must be
// declared for the route and method, and a JSON body (application/json or
// application/problem+json) must match the declared schema. Requests that
// matched no route are not the spec's business (404, 405 answers).
func (sp *specIndex) checkResponse(tb testing.TB, method string, r response) {
	tb.Helper()
	if r.Route == "" {
		return
	}
	op := sp.operation(r.Route, method)
	if op == nil {
		tb.Errorf("%s %s answered %d but the spec has no such operation", method, r.Route, r.Status)
		return
	}
	ref := op.Responses.Status(r.Status)
	if ref == nil || ref.Value == nil {
		tb.Errorf("%s %s answered %d, which the spec does not declare (body %s)", method, r.Route, r.Status, clipBody(r.Body))
		return
	}
	if len(ref.Value.Content) == 0 {
		if len(r.Body) > 0 {
			tb.Errorf("%s %s answered %d with a body, but the spec declares none", method, r.Route, r.Status)
		}
		return
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		tb.Errorf("%s %s: Content-Type %q: %v", method, r.Route, r.Header.Get("Content-Type"), err)
		return
	}
	media := ref.Value.Content.Get(mt)
	if media == nil {
		tb.Errorf("%s %s answered %d as %s, which the spec does not declare", method, r.Route, r.Status, mt)
		return
	}
	if mt != "application/json" && mt != "application/problem+json" {
		return
	}
	var v any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		tb.Errorf("%s %s answered %d with invalid JSON %s: %v", method, r.Route, r.Status, clipBody(r.Body), err)
		return
	}
	if err := media.Schema.Value.VisitJSON(v); err != nil {
		tb.Errorf("%s %s answered %d with a body the spec refuses: %v\nbody: %s", method, r.Route, r.Status, err, clipBody(r.Body))
	}
}

// checkObservedCodes checks that every (route, method, status) the server
// counted in sketchd_http_requests_total is declared in the spec.
func (e *env) checkObservedCodes(tb testing.TB) {
	tb.Helper()
	for _, c := range e.observed(tb) {
		if c.route == "unmatched" {
			continue
		}
		method := c.method
		if method == http.MethodHead {
			method = http.MethodGet // HEAD answers like GET (see the spec's description)
		}
		op := e.spec.operation(c.route, method)
		if op == nil {
			// chi matched the path but not the method (405), or only
			// the /v1 mount (404).
			if c.code != http.StatusMethodNotAllowed && !(c.code == http.StatusNotFound && c.route == "/v1/*") {
				tb.Errorf("%s %s answered %d but the spec has no such operation", c.method, c.route, c.code)
			}
			continue
		}
		declared := op.Responses.Status(c.code) != nil
		// The default response documents the 500 any route can give and
		// the 499 logged for clients that went away; it covers nothing else.
		if !declared && (c.code >= 500 || c.code == statusClientClosed) {
			declared = op.Responses.Default() != nil
		}
		if !declared {
			tb.Errorf("%s %s answered %d (%d times), which the spec does not declare", c.method, c.route, c.code, int(c.n))
		}
	}
}

// observedCode is one sketchd_http_requests_total series.
type observedCode struct {
	route, method string
	code          int
	n             float64
}

// observed reads sketchd_http_requests_total from the registry.
func (e *env) observed(tb testing.TB) []observedCode {
	tb.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		tb.Errorf("gather: %v", err)
		return nil
	}
	var out []observedCode
	for _, mf := range mfs {
		if mf.GetName() != "sketchd_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := labels(m)
			code, _ := strconv.Atoi(l["code"])
			out = append(out, observedCode{l["route"], l["method"], code, m.GetCounter().GetValue()})
		}
	}
	return out
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// TestSpecIsValid validates api/openapi.yaml as an OpenAPI 3.0.3 document.
func TestSpecIsValid(t *testing.T) {
	t.Parallel()
	sp := loadSpec(t)
	if sp.doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi = %q, want 3.0.3", sp.doc.OpenAPI)
	}
	if err := sp.doc.Validate(t.Context()); err != nil {
		t.Fatalf("api/openapi.yaml is not valid OpenAPI: %v", err)
	}
	// Every operation has an id and declares what it answers.
	for path, item := range sp.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" {
				t.Errorf("%s %s has no operationId", method, path)
			}
			if op.Responses.Len() == 0 {
				t.Errorf("%s %s declares no responses", method, path)
			}
		}
	}
}

// TestRoutesMatchSpec compares the routes chi serves with the spec's
// paths: the same (method, pattern) pairs, no more, no fewer.
func TestRoutesMatchSpec(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var served []string
	err := chi.Walk(e.mux(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served = append(served, method+" "+route)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for path, item := range e.spec.doc.Paths.Map() {
		for method := range item.Operations() {
			declared = append(declared, method+" "+path)
		}
	}
	sort.Strings(served)
	sort.Strings(declared)
	for _, s := range served {
		if !slices.Contains(declared, s) {
			t.Errorf("served but not in the spec: %s", s)
		}
	}
	for _, d := range declared {
		if !slices.Contains(served, d) {
			t.Errorf("in the spec but not served: %s", d)
		}
	}
	if len(served) < 19 {
		t.Errorf("chi.Walk found %d routes: %v", len(served), served)
	}
}

// TestResponsesMatchSchemas sends one request of every answer kind and
// checks each body against its schema (do validates; here we also check
// that each kind was really produced).
func TestResponsesMatchSchemas(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "h1", `{"log2m":11}`)
	e.create(t, "h2", `{"log2m":12,"regwidth":4}`)
	e.create(t, "c1", `{"type":"cms","width":200,"depth":4,"topk":5}`)
	e.create(t, "c2", `{"type":"cms","epsilon":0.0136,"delta":0.0184}`)
	e.addIDs(t, "h1", idsJSON(idRange(0, 3000)...), 3000)
	e.addIDs(t, "h2", idsJSON(idRange(1000, 5000)...), 4000)
	e.addIDs(t, "c1", `{"items":[{"id":1,"count":5},{"id":"x","count":2}]}`, 2)
	e.addIDs(t, "c2", `{"ids":[1,2,3]}`, 3)

	type probe struct {
		name    string
		r       response
		want    int
		problem bool
	}
	probes := []probe{
		{name: "describe hll", r: e.get(t, "/v1/sketches/h1"), want: 200},
		{name: "describe cms", r: e.get(t, "/v1/sketches/c1"), want: 200},
		{name: "list", r: e.get(t, "/v1/sketches?limit=2"), want: 200},
		{name: "list last page", r: e.get(t, "/v1/sketches?after=h1"), want: 200},
		{name: "create same again", r: e.send(t, "PUT", "/v1/sketches/h1", "application/json", `{"log2m":11}`), want: 200},
		{name: "add", r: e.postJSON(t, "/v1/sketches/h1/add", `{"ids":[1,"a"]}`), want: 200},
		{name: "union hll", r: e.postJSON(t, "/v1/union", `{"sketches":["h1","h2"]}`), want: 200},
		{name: "union hll into", r: e.postJSON(t, "/v1/union", `{"sketches":["h1","h2"],"into":"u"}`), want: 200},
		{name: "union cms", r: e.postJSON(t, "/v1/union", `{"sketches":["c1","c1"]}`), want: 200},
		{name: "intersection of 2", r: e.postJSON(t, "/v1/intersection", `{"sketches":["h1","h2"]}`), want: 200},
		{name: "intersection mle", r: e.postJSON(t, "/v1/intersection", `{"sketches":["h1","h2"],"method":"mle"}`), want: 200},
		{name: "intersection of 3", r: e.postJSON(t, "/v1/intersection", `{"sketches":["h1","h2","u"]}`), want: 200},
		{name: "frequency", r: e.postJSON(t, "/v1/sketches/c1/frequency", `{"ids":[1,"x",99]}`), want: 200},
		{name: "frequency get", r: e.get(t, "/v1/sketches/c1/frequency?id=1&id=2"), want: 200},
		{name: "top", r: e.get(t, "/v1/sketches/c1/top?k=2"), want: 200},
		{name: "events", r: e.postJSON(t, "/v1/events", `{"events":[{"id":7,"sketches":["h1","c1"]}]}`), want: 200},
		{name: "fold", r: e.postJSON(t, "/v1/sketches/h2/fold", `{"log2m":10,"into":"f"}`), want: 200},
		{name: "raw put", r: e.send(t, "PUT", "/v1/sketches/r/raw", "application/octet-stream", string(e.raw(t, "h1"))), want: 201},
		{name: "raw post", r: e.send(t, "POST", "/v1/sketches/r/raw", "application/octet-stream", string(e.raw(t, "h2"))), want: 200},
		{name: "healthz", r: e.get(t, "/healthz"), want: 200},
		{name: "readyz", r: e.get(t, "/readyz"), want: 200},
		{name: "problem 404", r: e.get(t, "/v1/sketches/nope"), want: 404, problem: true},
		{name: "problem 400", r: e.postJSON(t, "/v1/sketches/h1/add", `{"ids":[1.5]}`), want: 400, problem: true},
		{name: "problem 409", r: e.get(t, "/v1/sketches/h1/top"), want: 409, problem: true},
		{name: "problem 415", r: e.send(t, "POST", "/v1/union", "text/csv", "a"), want: 415, problem: true},
		{name: "overlap of 2", r: e.postJSON(t, "/v1/overlap", `{"sketches":["h1","h2"]}`), want: 200},
		{name: "overlap of 3", r: e.postJSON(t, "/v1/overlap", `{"sketches":["h1","h2","u"]}`), want: 200},
	}
	for _, p := range probes {
		if p.r.Status != p.want {
			t.Errorf("%s: %v, want %d", p.name, p.r, p.want)
		}
		if p.r.Route == "" {
			t.Errorf("%s: matched no route", p.name)
		}
		if p.problem {
			checkProblemBody(t, p.r)
		}
	}
	// The optional shapes appear where DESIGN.md says.
	var x map[string]any
	decode(t, probes[9].r.Body, &x)
	for _, k := range []string{"jaccard", "a_not_b", "b_not_a"} {
		if _, ok := x[k]; !ok {
			t.Errorf("intersection of two lacks %q: %s", k, probes[9].r.Body)
		}
	}
	var u map[string]any
	decode(t, probes[7].r.Body, &u)
	if u["into"] != "u" {
		t.Errorf("union into answered into=%v, want \"u\"", u["into"])
	}
	spec := must(t, e.get(t, "/openapi.yaml"), 200, "openapi.yaml")
	if !bytes.Equal(spec.Body, api.Spec()) {
		t.Errorf("/openapi.yaml serves %d bytes that differ from api.Spec()", len(spec.Body))
	}
	if !strings.HasPrefix(spec.Header.Get("Content-Type"), "application/yaml") {
		t.Errorf("/openapi.yaml Content-Type = %q", spec.Header.Get("Content-Type"))
	}
}

// TestSpecCatchesBadBodies makes sure the response check can fail: a body
// missing required fields and an undeclared status are refused.
func TestSpecCatchesBadBodies(t *testing.T) {
	t.Parallel()
	sp := loadSpec(t)
	rec := &fakeTB{TB: t}
	ok := response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"accepted":3}`), Route: "/v1/sketches/{name}/add"}
	sp.checkResponse(rec, "POST", ok)
	if rec.failed {
		t.Fatalf("a valid add answer was refused: %v", rec.msgs)
	}
	for _, bad := range []response{
		{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"accepted":"3"}`), Route: "/v1/sketches/{name}/add"},
		{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"total":1}`), Route: "/v1/sketches/{name}/frequency"},
		{Status: 418, Header: http.Header{"Content-Type": {"application/problem+json"}}, Body: []byte(`{}`), Route: "/v1/sketches/{name}/add"},
		{Status: 400, Header: http.Header{"Content-Type": {"application/problem+json"}}, Body: []byte(`{"type":"x","title":"t","status":400}`), Route: "/v1/sketches/{name}/add"},
	} {
		rec := &fakeTB{TB: t}
		sp.checkResponse(rec, "POST", bad)
		if !rec.failed {
			t.Errorf("checkResponse accepted %d %s on %s", bad.Status, bad.Body, bad.Route)
		}
	}
}

// fakeTB records failures instead of failing the test.
type fakeTB struct {
	testing.TB
	failed bool
	msgs   []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.failed = true
	f.msgs = append(f.msgs, format)
}

// TestUploadFormatsMatchRegistry: the upload routes' format parameter
// lists every kind sketchd reads, no more, and PUT …/raw's description
// names each of them, so that a client generated from the spec can name
// any kind and a reader learns which bytes each takes.
func TestUploadFormatsMatchRegistry(t *testing.T) {
	t.Parallel()
	sp := loadSpec(t)
	var types []string
	for _, k := range sketch.Kinds() {
		if !slices.Contains(types, string(k.Type)) {
			types = append(types, string(k.Type))
		}
	}
	p := sp.doc.Components.Parameters["UploadFormat"]
	if p == nil || p.Value.Schema == nil {
		t.Fatal("the spec has no UploadFormat parameter with a schema")
	}
	var enum []string
	for _, v := range p.Value.Schema.Value.Enum {
		s, _ := v.(string)
		enum = append(enum, s)
	}
	sort.Strings(types)
	sort.Strings(enum)
	if !slices.Equal(enum, types) {
		t.Errorf("UploadFormat's enum %v, want the registry's types %v", enum, types)
	}
	put := sp.operation("/v1/sketches/{name}/raw", http.MethodPut)
	for _, typ := range types {
		if !strings.Contains(put.Description, "`"+typ+"`") {
			t.Errorf("PUT /v1/sketches/{name}/raw's description does not name `%s`", typ)
		}
	}
	for _, op := range []*openapi3.Operation{put, sp.operation("/v1/sketches/{name}/raw", http.MethodPost)} {
		found := false
		for _, ref := range op.Parameters {
			found = found || ref.Ref == "#/components/parameters/UploadFormat"
		}
		if !found {
			t.Errorf("%s does not take the format parameter", op.OperationID)
		}
	}
}
