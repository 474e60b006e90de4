package server

import (
	"bytes"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
)

// frequencyAnswer decodes a frequency answer keeping ids as JSON gave
// them (float64 for numbers, string for texts).
type frequencyAnswer struct {
	Total   uint64 `json:"total"`
	Results []struct {
		ID         any     `json:"id"`
		Estimate   uint64  `json:"estimate"`
		ErrorBound float64 `json:"error_bound"`
		Confidence float64 `json:"confidence"`
	} `json:"results"`
}

type topAnswer struct {
	Items []struct {
		ID       any    `json:"id"`
		Estimate uint64 `json:"estimate"`
	} `json:"items"`
}

func (e *env) describeCMS(tb testing.TB, name string) cmsResponse {
	tb.Helper()
	var d cmsResponse
	decode(tb, must(tb, e.get(tb, "/v1/sketches/"+name), http.StatusOK, "describe "+name).Body, &d)
	return d
}

func TestCMSOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	// Created by shape and by error bounds, both described back.
	e.create(t, "c1", `{"type":"cms","width":272,"depth":5,"topk":3}`)
	e.create(t, "c2", `{"type":"cms","epsilon":0.01,"delta":0.01,"conservative":true}`)
	d1, d2 := e.describeCMS(t, "c1"), e.describeCMS(t, "c2")
	if d1.Type != "cms" || d1.Width != 272 || d1.Depth != 5 || d1.TopK != 3 || d1.Conservative || d1.Total != 0 {
		t.Errorf("describe c1 = %+v", d1)
	}
	if math.Abs(d1.Epsilon-math.E/272) > 1e-12 || math.Abs(d1.Delta-math.Exp(-5)) > 1e-12 {
		t.Errorf("c1 epsilon, delta = %v, %v, want e/272, e^-5", d1.Epsilon, d1.Delta)
	}
	if d2.Width != 272 || d2.Depth != 5 || !d2.Conservative || d2.TopK != 0 || d2.Epsilon > 0.01 || d2.Delta > 0.01 {
		t.Errorf("describe c2 = %+v, want width 272 = ceil(e/0.01), depth 5 = ceil(ln 100), conservative", d2)
	}
	// The same parameters, either way round, answer 200.
	must(t, e.send(t, "PUT", "/v1/sketches/c2", "application/json", `{"type":"cms","epsilon":0.01,"delta":0.01,"conservative":true}`), 200, "same bounds again")
	must(t, e.send(t, "PUT", "/v1/sketches/c2", "application/json", `{"type":"cms","width":272,"depth":5,"conservative":true}`), 200, "the same shape as width and depth")
	checkProblem(t, e.send(t, "PUT", "/v1/sketches/c2", "application/json", `{"type":"cms","epsilon":0.01,"delta":0.01}`), 409)

	// Ids (count 1 each) and items, in every body format.
	e.addIDs(t, "c1", `{"ids":[1,2,2,"a","a","a"]}`, 6)
	e.addIDs(t, "c1", `{"items":[{"id":2,"count":10},{"id":"b","count":4}]}`, 2)
	must(t, e.send(t, "POST", "/v1/sketches/c1/add?id_type=text", "text/plain", "a\nq\n"), 200, "text ids")
	must(t, e.send(t, "POST", "/v1/sketches/c1/add", "application/x-ndjson", "1\n\"a\"\n"), 200, "ndjson ids")
	must(t, e.send(t, "POST", "/v1/sketches/c1/add", "application/octet-stream", octetIDs(7, 7)), 200, "octet ids")
	truth := map[any]uint64{float64(1): 2, float64(2): 12, "a": 5, "b": 4, "q": 1, float64(7): 2, "1": 0, float64(999): 0}
	const total = 26
	if d := e.describeCMS(t, "c1"); d.Total != total {
		t.Fatalf("c1 total = %d, want %d", d.Total, total)
	}

	checkFrequency := func(r response, want []any) {
		t.Helper()
		var f frequencyAnswer
		decode(t, must(t, r, 200, "frequency").Body, &f)
		if f.Total != total || len(f.Results) != len(want) {
			t.Fatalf("frequency = %+v, want total %d and %d results", f, total, len(want))
		}
		for i, res := range f.Results {
			if res.ID != want[i] {
				t.Errorf("results[%d].id = %#v, want %#v (ids echo back as given)", i, res.ID, want[i])
			}
			tr := truth[want[i]]
			if res.Estimate < tr || float64(res.Estimate) > float64(tr)+res.ErrorBound {
				t.Errorf("estimate of %v = %d, true count %d, bound %v", want[i], res.Estimate, tr, res.ErrorBound)
			}
			if math.Abs(res.ErrorBound-d1.Epsilon*total) > 1e-9 || math.Abs(res.Confidence-(1-d1.Delta)) > 1e-12 {
				t.Errorf("results[%d] bound %v confidence %v, want ε·N = %v and 1-δ = %v", i, res.ErrorBound, res.Confidence, d1.Epsilon*total, 1-d1.Delta)
			}
		}
	}
	checkFrequency(e.postJSON(t, "/v1/sketches/c1/frequency", `{"ids":[1,2,"a","b","1",999]}`), []any{float64(1), float64(2), "a", "b", "1", float64(999)})
	checkFrequency(e.get(t, "/v1/sketches/c1/frequency?id=1&id=2&id=999"), []any{float64(1), float64(2), float64(999)})
	checkFrequency(e.get(t, "/v1/sketches/c1/frequency?id=a&id=1&id_type=text"), []any{"a", "1"})
	checkFrequency(e.get(t, "/v1/sketches/c1/frequency?id=7&id_type=int"), []any{float64(7)})

	// Heavy hitters, heaviest first.
	var top topAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/c1/top"), 200, "top").Body, &top)
	wantTop := []any{float64(2), "a", "b"}
	if len(top.Items) != len(wantTop) {
		t.Fatalf("top = %+v, want %v", top, wantTop)
	}
	for i, it := range top.Items {
		if it.ID != wantTop[i] || it.Estimate != truth[wantTop[i]] {
			t.Errorf("top[%d] = %#v %d, want %#v %d", i, it.ID, it.Estimate, wantTop[i], truth[wantTop[i]])
		}
	}
	decode(t, must(t, e.get(t, "/v1/sketches/c1/top?k=2"), 200, "top 2").Body, &top)
	if len(top.Items) != 2 || top.Items[0].ID != float64(2) || top.Items[1].ID != "a" {
		t.Errorf("top?k=2 = %+v", top)
	}
	decode(t, must(t, e.get(t, "/v1/sketches/c2/top?k=1"), 409, "top of a cms without topk").Body, &map[string]any{})

	// Unions: same shape adds up; other shapes and kinds are refused.
	e.create(t, "c3", `{"type":"cms","width":272,"depth":5}`)
	e.addIDs(t, "c3", `{"items":[{"id":2,"count":100}]}`, 1)
	var u unionCMSResponse
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"sketches":["c1","c3"]}`), 200, "union").Body, &u)
	if u.Type != "cms" || u.Total != total+100 || u.Width != 272 || u.Depth != 5 || u.Into != "" {
		t.Errorf("union = %+v", u)
	}
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"sketches":["c1","c3"],"into":"cu"}`), 200, "union into").Body, &u)
	if u.Into != "cu" {
		t.Errorf("union into = %+v", u)
	}
	var f frequencyAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/cu/frequency?id=2"), 200, "frequency of the union").Body, &f)
	if f.Total != total+100 || f.Results[0].Estimate != 112 {
		t.Errorf("union's frequency of 2 = %+v, want 112 of %d", f, total+100)
	}
	e.create(t, "c4", `{"type":"cms","width":100,"depth":5}`)
	e.create(t, "h", `{}`)
	checkProblem(t, e.postJSON(t, "/v1/union", `{"sketches":["c1","c4"]}`), 409)
	// Mixing kinds is one mistake with one status everywhere.
	checkProblem(t, e.postJSON(t, "/v1/union", `{"sketches":["c1","h"]}`), 409)

	// Raw round trips, binary and hex.
	raw := e.raw(t, "c1")
	if raw[0] != 0xC1 { // the Count-Min format's first byte (cms doc.go)
		t.Fatalf("c1 raw starts with %#x", raw[0])
	}
	must(t, e.send(t, "PUT", "/v1/sketches/cr/raw", "application/octet-stream", string(raw)), 201, "upload")
	if got := e.raw(t, "cr"); !bytes.Equal(got, raw) {
		t.Errorf("uploaded cms downloads as %x, want %x", clipBytes(got), clipBytes(raw))
	}
	if d := e.describeCMS(t, "cr"); d.Width != 272 || d.Depth != 5 || d.TopK != 3 || d.Total != total {
		t.Errorf("uploaded cms describes as %+v", d)
	}
	hexBody := must(t, e.get(t, "/v1/sketches/c1/raw?format=hex"), 200, "hex").Body
	if !strings.HasPrefix(string(hexBody), `\x`) {
		t.Fatalf("hex download starts %q", clipBytes(hexBody))
	}
	must(t, e.send(t, "PUT", "/v1/sketches/crx/raw", "text/plain", string(hexBody)), 201, "hex upload")
	if got := e.raw(t, "crx"); !bytes.Equal(got, raw) {
		t.Errorf("hex-uploaded cms downloads differently")
	}
	must(t, e.send(t, "POST", "/v1/sketches/c3/raw", "application/octet-stream", string(raw)), 200, "merge upload")
	if d := e.describeCMS(t, "c3"); d.Total != total+100 {
		t.Errorf("c3 total after merging c1 = %d, want %d", d.Total, total+100)
	}
}

// TestEventsAllOrNothing mixes HLL and CMS sketches in one events body:
// a refusal anywhere changes nothing anywhere.
func TestEventsAllOrNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "h", `{"log2m":11}`)
	e.create(t, "c", `{"type":"cms","width":64,"depth":3}`)
	e.addIDs(t, "h", idsJSON(idRange(0, 100)...), 100)
	e.addIDs(t, "c", `{"ids":[1,2,3]}`, 3)
	before := e.snapshot(t)

	long := strings.Repeat("y", 1025)
	for _, c := range []struct {
		name, body string
		want       int
		mention    string
	}{
		{"unknown sketch last", `{"events":[{"id":500,"sketches":["h","c"]},{"id":501,"sketches":["c","nope"]}]}`, 404, `"nope"`},
		{"unknown sketch first", `{"events":[{"id":500,"sketches":["ghost"]},{"id":501,"sketches":["h","c"]}]}`, 404, `"ghost"`},
		{"text too long for a cms", `{"events":[{"id":500,"sketches":["h","c"]},{"id":"` + long + `","sketches":["h","c"]}]}`, 400, "events[1]"},
		{"bad id", `{"events":[{"id":500,"sketches":["h","c"]},{"id":5.5,"sketches":["h"]}]}`, 400, "events[1].id"},
		{"bad name", `{"events":[{"id":500,"sketches":["h","c"]},{"id":6,"sketches":["c","no way"]}]}`, 400, "events[1].sketches[1]"},
		{"unknown sketch with create false", `{"events":[{"id":500,"sketches":["h","c","fresh"]}]}`, 404, `"fresh"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := checkProblem(t, e.postJSON(t, "/v1/events", c.body), c.want)
			if !strings.Contains(p.Detail, c.mention) {
				t.Errorf("detail %q does not name %s", p.Detail, c.mention)
			}
			if d := before.diff(e.snapshot(t)); len(d) > 0 {
				t.Errorf("the store changed: %v", d)
			}
		})
	}

	// A valid body changes both kinds.
	must(t, e.postJSON(t, "/v1/events", `{"events":[{"id":1000,"sketches":["h","c"]},{"id":"x","sketches":["c"]}]}`), 200, "events")
	p := hll.DefaultParams()
	p.Log2m = 11
	want := hllOf(t, p, append(idRange(0, 100), 1000)...)
	if got := e.raw(t, "h"); !bytes.Equal(got, encode(t, want)) {
		t.Errorf("h after events = %x, want %x", clipBytes(got), clipBytes(encode(t, want)))
	}
	if d := e.describeCMS(t, "c"); d.Total != 5 {
		t.Errorf("c total = %d, want 5", d.Total)
	}

	// ?create=true makes missing sketches as default HLLs.
	must(t, e.postJSON(t, "/v1/events?create=true", `{"events":[{"id":7,"sketches":["new1","c"]},{"id":"seven","sketches":["new1","new2"]}]}`), 200, "events with create")
	h1 := hllOf(t, hll.DefaultParams(), 7)
	h1.AddString("seven")
	if got := e.raw(t, "new1"); !bytes.Equal(got, encode(t, h1)) {
		t.Errorf("new1 = %x, want %x", got, encode(t, h1))
	}
	h2, _ := hll.New(hll.DefaultParams())
	h2.AddString("seven")
	if got := e.raw(t, "new2"); !bytes.Equal(got, encode(t, h2)) {
		t.Errorf("new2 = %x, want %x", got, encode(t, h2))
	}
	if d := e.describeCMS(t, "c"); d.Total != 6 {
		t.Errorf("c total = %d, want 6", d.Total)
	}
	var d hllResponse
	decode(t, must(t, e.get(t, "/v1/sketches/new1"), 200, "describe new1").Body, &d)
	if d.Log2m != 14 || d.Regwidth != 5 || d.Expthresh != -1 || !d.Sparse || d.Cardinality != 2 {
		t.Errorf("new1 = %+v, want a default hll holding 2 ids", d)
	}
}
