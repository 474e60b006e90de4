package server

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
)

// TestRawPostFold: a sketch built with PostgreSQL's default log2m (11)
// cannot be unioned into a log2m=14 sketch without losing registers. The
// refusal names ?fold=true; with it the stored sketch is folded down, and
// the result is the sketch of all the ids built at log2m 11.
func TestRawPostFold(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "s", `{}`)
	e.addIDs(t, "s", idsJSON(idRange(1, 5001)...), 5000)
	before := e.raw(t, "s")
	p11 := hll.DefaultParams()
	p11.Log2m = 11
	up := encode(t, hllOf(t, p11, idRange(4000, 9001)...))
	path := "/v1/sketches/s/raw"

	pr := checkProblem(t, e.send(t, http.MethodPost, path, "application/octet-stream", string(up)), http.StatusConflict)
	if !strings.Contains(pr.Detail, "?fold=true") || !strings.Contains(pr.Detail, "log2m=11") {
		t.Errorf("409 detail %q does not name ?fold=true and the log2m", pr.Detail)
	}
	if !bytes.Equal(e.raw(t, "s"), before) {
		t.Fatal("a refused union changed the sketch")
	}

	var d hllResponse
	decode(t, must(t, e.send(t, http.MethodPost, path+"?fold=true", "application/octet-stream", string(up)), http.StatusOK, "fold").Body, &d)
	if d.FoldedFromLog2m != 14 || d.Log2m != 11 {
		t.Errorf("answer says folded from %d to %d, want 14 to 11", d.FoldedFromLog2m, d.Log2m)
	}
	if got, want := e.raw(t, "s"), encode(t, hllOf(t, p11, idRange(1, 9001)...)); !bytes.Equal(got, want) {
		t.Errorf("folded union differs from the sketch of all ids at log2m 11:\n got %x\nwant %x", clipBytes(got), clipBytes(want))
	}

	// Nothing left to fold: the answer does not claim a fold.
	resp := must(t, e.send(t, http.MethodPost, path+"?fold=true", "text/plain", `\x`+hexOf(up)), http.StatusOK, "fold again")
	if bytes.Contains(resp.Body, []byte("folded_from_log2m")) {
		t.Errorf("a union that folded nothing says it did: %s", resp.Body)
	}

	e.create(t, "c", `{"type":"cms","width":64,"depth":2}`)
	c, _ := cms.New(cms.Params{Width: 64, Depth: 2})
	cb, _ := c.MarshalBinary()
	checkProblem(t, e.send(t, http.MethodPost, "/v1/sketches/c/raw?fold=true", "application/octet-stream", string(cb)), http.StatusBadRequest)
	checkProblem(t, e.send(t, http.MethodPost, path+"?fold=maybe", "application/octet-stream", string(up)), http.StatusBadRequest)
	checkProblem(t, e.send(t, http.MethodPost, "/v1/sketches/none/raw?fold=true", "application/octet-stream", string(up)), http.StatusNotFound)
}

// TestCreateFromItems: ?create=true makes the kind a body implies: counted
// items a Count-Min with the defaults, ids an HLL.
func TestCreateFromItems(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	resp := must(t, e.postJSON(t, "/v1/sketches/views/add?create=true", `{"items":[{"id":"alice","count":3},{"id":7,"count":2}]}`), http.StatusOK, "add items with create")
	if !bytes.Contains(resp.Body, []byte(`"accepted":2`)) {
		t.Errorf("answer %s", resp.Body)
	}
	d := e.describeCMS(t, "views")
	def := cms.DefaultParams()
	if d.Type != "cms" || d.Width != def.Width || d.Depth != def.Depth || d.Total != 5 {
		t.Errorf("created %+v, want a default cms with total 5", d)
	}
	// Leading white space and a BOM-free body with ids still make an HLL.
	must(t, e.postJSON(t, "/v1/sketches/users/add?create=true", ` {"ids":[1,2,3]}`), http.StatusOK, "add ids with create")
	var h hllResponse
	decode(t, must(t, e.get(t, "/v1/sketches/users"), http.StatusOK, "describe").Body, &h)
	if h.Type != "hll" || h.Cardinality != 3 {
		t.Errorf("created %+v, want an hll of 3", h)
	}
	// Items to an existing HLL are still refused.
	checkProblem(t, e.postJSON(t, "/v1/sketches/users/add?create=true", `{"items":[{"id":1,"count":1}]}`), http.StatusBadRequest)
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }
