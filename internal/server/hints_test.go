package server

import (
	"strings"
	"testing"
)

// TestAddToMissingSketchHintsCreate: the 404 of an add to a sketch that
// does not exist says how to make one, ?create=true among them, and the
// add with it then succeeds.
func TestAddToMissingSketchHintsCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{"/v1/sketches/newone/add", "/v1/sketches/newone/add?report=new"} {
		r := must(t, e.postJSON(t, path, `{"ids":[1,2]}`), 404, "add to a missing sketch")
		var p problem
		decode(t, r.Body, &p)
		if !strings.Contains(p.Detail, `sketch "newone" does not exist`) || !strings.Contains(p.Detail, "?create=true") || !strings.Contains(p.Detail, "PUT /v1/sketches/newone") {
			t.Errorf("%s: detail %q does not say how to create the sketch", path, p.Detail)
		}
	}
	must(t, e.postJSON(t, "/v1/sketches/newone/add?create=true", `{"ids":[1,2]}`), 200, "add with ?create=true")
	// A missing sketch that is not the one added to is not given the hint.
	r := must(t, e.postJSON(t, "/v1/union", `{"sketches":["newone","nope"]}`), 404, "union with a missing sketch")
	var p problem
	decode(t, r.Body, &p)
	if strings.Contains(p.Detail, "create=true") {
		t.Errorf("a union's 404 names ?create=true: %q", p.Detail)
	}
}
