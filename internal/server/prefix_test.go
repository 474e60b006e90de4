package server

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestUnionPrefix unions sketches by name prefix over HTTP and checks the
// answers against the same union listed by name: HLLs of mixed log2m,
// Count-Mins stored into a name under the prefix (left out, so a repeat
// gives the same total), and a prefix as an intersection operand.
func TestUnionPrefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var names []string
	for i := range 12 {
		n := fmt.Sprintf("campaign:%02d", i)
		names = append(names, `"`+n+`"`)
		e.create(t, n, fmt.Sprintf(`{"log2m":%d}`, 11+i%2))
		e.addIDs(t, n, fmt.Sprintf(`{"ids":[%s]}`, ints(i*50, i*50+80)), 80)
	}
	e.create(t, "campaigns", `{"log2m":11}`) // not under "campaign:"
	e.addIDs(t, "campaigns", `{"ids":[`+ints(100000, 100500)+`]}`, 500)

	var byName, byPrefix unionResponse
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"sketches":[`+strings.Join(names, ",")+`],"into":"listed"}`), http.StatusOK, "union by name").Body, &byName)
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"prefix":"campaign:","into":"campaign:all"}`), http.StatusOK, "union by prefix").Body, &byPrefix)
	if byPrefix.Matched != 12 || byPrefix.Cardinality != byName.Cardinality || byPrefix.Log2m != 11 || byPrefix.Into != "campaign:all" {
		t.Errorf("prefix union %+v, want 12 sketches and the union by name %+v", byPrefix, byName)
	}
	if !bytes.Equal(e.raw(t, "campaign:all"), e.raw(t, "listed")) {
		t.Error("the stored prefix union differs from the stored union by name")
	}
	// Again: campaign:all is under the prefix but left out.
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"prefix":"campaign:","into":"campaign:all"}`), http.StatusOK, "union by prefix again").Body, &byPrefix)
	if byPrefix.Matched != 12 {
		t.Errorf("the repeated prefix union took %d sketches, want 12 (not its own result)", byPrefix.Matched)
	}
	// Without into, campaign:all is one of them.
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"prefix":"campaign:"}`), http.StatusOK, "union by prefix").Body, &byPrefix)
	if byPrefix.Matched != 13 || byPrefix.Cardinality != byName.Cardinality {
		t.Errorf("prefix union with its stored result: %+v", byPrefix)
	}

	// Count-Mins: a stored union under the prefix would be counted twice
	// if it were not left out.
	for i := range 3 {
		n := fmt.Sprintf("clicks:%d", i)
		e.create(t, n, `{"type":"cms","width":64,"depth":3}`)
		must(t, e.postJSON(t, "/v1/sketches/"+n+"/add", fmt.Sprintf(`{"items":[{"id":1,"count":%d}]}`, i+1)), http.StatusOK, "add")
	}
	for range 2 {
		var u unionCMSResponse
		decode(t, must(t, e.postJSON(t, "/v1/union", `{"prefix":"clicks:","into":"clicks:all"}`), http.StatusOK, "cms union by prefix").Body, &u)
		if u.Total != 6 || u.Matched != 3 {
			t.Errorf("cms prefix union: total %d over %d sketches, want 6 over 3", u.Total, u.Matched)
		}
	}

	// A prefix as an operand: users of any campaign who also bought.
	e.create(t, "buyers", `{"log2m":11}`)
	e.addIDs(t, "buyers", `{"ids":[`+ints(0, 300)+`]}`, 300)
	var x, listed intersectionResponse
	decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":[{"prefix":"campaign:"},"buyers"]}`), http.StatusOK, "intersection with a prefix").Body, &x)
	decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["listed","buyers"]}`), http.StatusOK, "intersection with the union").Body, &listed)
	if x.Estimate != listed.Estimate || x.Estimate < 250 || x.Estimate > 350 {
		t.Errorf("intersection with the prefix %v, with the stored union %v; want equal, near 300", x.Estimate, listed.Estimate)
	}
	// Mixed kinds under a prefix, named.
	e.create(t, "campaign:zz", `{"type":"cms","width":64,"depth":3}`)
	r := must(t, e.postJSON(t, "/v1/union", `{"prefix":"campaign:"}`), http.StatusConflict, "union of mixed kinds")
	if !strings.Contains(string(r.Body), "campaign:zz") {
		t.Errorf("the conflict does not name the sketch of the other kind: %s", r.Body)
	}
}

// ints lists lo..hi-1 as a JSON array's elements.
func ints(lo, hi int) string {
	var b strings.Builder
	for i := lo; i < hi; i++ {
		if i > lo {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, i)
	}
	return b.String()
}
