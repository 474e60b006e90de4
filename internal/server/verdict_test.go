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
// width of its bounds gives. Three sketches of 137,000 ids sharing 8,000
// (log2m 14) have bounds about as wide as the estimate: not reliable, and
// the answer says why. Sharing 31,000 they reproduce a reported 3-way
// answer of about 31,000 ± 4,900, whose bounds spanned about 2.8× by
// inclusion–exclusion's envelope; measured on replicates its error is
// under a third of that and the answer reliable, its bounds holding the
// truth. Two sketches sharing most of their ids are reliable.
func TestIntersectionVerdictOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var x intersectionVerdict
	for _, shared := range []int64{8_000, 31_000} {
		core := idRange(0, shared)
		names := make([]string, 3)
		for i := range names {
			names[i] = string(rune('a'+i)) + strings.Repeat("x", int(shared/8_000))
			e.create(t, names[i], `{"log2m":14}`)
			lo := int64(i+1) * 1_000_000
			ids := slices.Concat(core, idRange(lo, lo+137_000-shared))
			must(t, e.send(t, http.MethodPost, "/v1/sketches/"+names[i]+"/add", "application/octet-stream", octetIDs(ids...)), http.StatusOK, "add to "+names[i])
		}
		decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["`+strings.Join(names, `","`)+`"]}`), http.StatusOK, "intersection").Body, &x)
		if x.Spurious || x.Lower > float64(shared) || x.Upper < float64(shared) {
			t.Fatalf("fixture: %+v, want bounds around %d", x, shared)
		}
		if shared == 31_000 {
			if x.Error > 4900/3 || !x.Reliable || x.Verdict != "reliable" {
				t.Errorf("reported answer %.0f ± %.0f [%.0f, %.0f] %s, want an error under a third of 4,900 and reliable", x.Estimate, x.Error, x.Lower, x.Upper, x.Verdict)
			}
			continue
		}
		if (x.Upper-x.Lower)/x.Estimate < 0.8 {
			t.Fatalf("fixture: %+v, want bounds about as wide as the estimate", x)
		}
		if x.Reliable || x.Verdict != "not_reliable" || !strings.HasPrefix(x.VerdictText, "Not reliable.") {
			t.Errorf("3-way answer %.0f [%.0f, %.0f]: reliable %v, verdict %q %q; want not reliable", x.Estimate, x.Lower, x.Upper, x.Reliable, x.Verdict, x.VerdictText)
		}
		if w := strings.Join(x.Warnings, "\n"); !strings.Contains(w, "span") {
			t.Errorf("warnings %q do not say the bounds are too wide", w)
		}
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
