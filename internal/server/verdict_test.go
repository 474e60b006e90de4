package server

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// intersectionVerdict is the part of an intersection answer that says
// how far to trust it.
type intersectionVerdict struct {
	Estimate, Error, Lower, Upper float64
	Spurious, Reliable            bool
	Verdict                       string   `json:"verdict"`
	VerdictText                   string   `json:"verdict_text"`
	Warnings                      []string `json:"warnings"`
}

// TestIntersectionVerdictOverHTTP: the answer carries the verdict the
// width of its bounds gives. Three sketches of 137,000 ids sharing 31,000
// (log2m 14) reproduce a reported 3-way answer of about 31,000 ± 4,900
// whose bounds span about 2.8×: not reliable, and the answer says why.
// Two sketches sharing most of their ids are reliable.
func TestIntersectionVerdictOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	core := idRange(0, 31_000)
	for i, name := range []string{"a", "b", "c"} {
		e.create(t, name, `{"log2m":14}`)
		lo := int64(i+1) * 1_000_000
		ids := slices.Concat(core, idRange(lo, lo+106_000))
		must(t, e.send(t, http.MethodPost, "/v1/sketches/"+name+"/add", "application/octet-stream", octetIDs(ids...)), http.StatusOK, "add to "+name)
	}
	var x intersectionVerdict
	decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["a","b","c"]}`), http.StatusOK, "intersection").Body, &x)
	if x.Error < 4400 || x.Error > 5400 || x.Spurious || x.Lower > 31_000 || x.Upper < 31_000 || x.Upper/x.Lower < 2.2 {
		t.Fatalf("fixture: %+v, want about 31,000 ± 4,900 with bounds about 2.8× apart", x)
	}
	if x.Reliable || x.Verdict != "not_reliable" || !strings.HasPrefix(x.VerdictText, "Not reliable.") {
		t.Errorf("3-way answer %.0f [%.0f, %.0f]: reliable %v, verdict %q %q; want not reliable", x.Estimate, x.Lower, x.Upper, x.Reliable, x.Verdict, x.VerdictText)
	}
	if w := strings.Join(x.Warnings, "\n"); !strings.Contains(w, "span") {
		t.Errorf("warnings %q do not say the bounds are too wide", w)
	}

	e.create(t, "d", `{"log2m":14}`)
	e.create(t, "f", `{"log2m":14}`)
	must(t, e.send(t, http.MethodPost, "/v1/sketches/d/add", "application/octet-stream", octetIDs(idRange(0, 100_000)...)), http.StatusOK, "add to d")
	must(t, e.send(t, http.MethodPost, "/v1/sketches/f/add", "application/octet-stream", octetIDs(idRange(20_000, 120_000)...)), http.StatusOK, "add to f")
	decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["d","f"]}`), http.StatusOK, "intersection").Body, &x)
	if !x.Reliable || x.Verdict != "reliable" || !strings.HasPrefix(x.VerdictText, "Reliable.") || x.Lower > 80_000 || x.Upper < 80_000 {
		t.Errorf("pair answer %+v, want a reliable 80,000", x)
	}
}

// TestThetaIntersectionVerdict: a theta intersection is judged by the
// width of its bounds too. With lg_k 5 two sets of 20,000 sharing half
// keep a few dozen sampled users in the intersection, enough for the old
// rule (10) but bounds far wider than half the estimate.
func TestThetaIntersectionVerdict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "a", `{"type":"theta","lg_k":5}`)
	e.create(t, "b", `{"type":"theta","lg_k":5}`)
	e.addIDs(t, "a", idsJSON(idRange(0, 20_000)...), 20_000)
	e.addIDs(t, "b", idsJSON(idRange(10_000, 30_000)...), 20_000)
	var x struct {
		intersectionVerdict
		Retained int `json:"retained"`
	}
	decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["a","b"]}`), http.StatusOK, "intersection").Body, &x)
	if x.Retained < 10 || x.Spurious {
		t.Fatalf("fixture: %+v, want at least 10 sampled users and not spurious", x)
	}
	if x.Reliable || x.Verdict != "not_reliable" || !strings.Contains(x.VerdictText, "span") {
		t.Errorf("theta answer %.0f [%.0f, %.0f] from %d samples: reliable %v, verdict %q %q; want not reliable, bounds too wide",
			x.Estimate, x.Lower, x.Upper, x.Retained, x.Reliable, x.Verdict, x.VerdictText)
	}
	// Exact mode: every hash kept, the count has no error.
	e.create(t, "s", `{"type":"theta","lg_k":12}`)
	e.create(t, "u", `{"type":"theta","lg_k":12}`)
	e.addIDs(t, "s", idsJSON(idRange(0, 8)...), 8)
	e.addIDs(t, "u", idsJSON(idRange(4, 12)...), 8)
	decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["s","u"]}`), http.StatusOK, "intersection").Body, &x)
	if x.Estimate != 4 || !x.Reliable || x.Verdict != "exact" {
		t.Errorf("exact theta answer %+v, want exactly 4", x)
	}
}
