package server

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// mistakeTable reads the "kind of mistake -> status" table from the spec's
// description: the first column names the kind, the third its status.
func mistakeTable(tb testing.TB, description string) map[string]int {
	tb.Helper()
	row := regexp.MustCompile(`(?m)^\| ([a-z][^|]*?) \| [^|]* \| (\d{3})[^|]* \| ([a-z-]+) \|$`)
	out := map[string]int{}
	for _, m := range row.FindAllStringSubmatch(description, -1) {
		status, _ := strconv.Atoi(m[2])
		out[m[1]] = status
	}
	if len(out) < 8 {
		tb.Fatalf("the spec's description has %d rows of mistakes and statuses, want the whole table", len(out))
	}
	return out
}

// TestOneStatusPerMistake sends examples of each kind of mistake on
// several routes and checks that every one gets the status the spec's
// table gives that kind, whatever the route: the same pair of sketches in
// a union and an intersection, a fold and a download, fail alike.
func TestOneStatusPerMistake(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	makeFixture(t).load(t, e)
	table := mistakeTable(t, e.spec.doc.Info.Description)
	js := "application/json"

	type attempt struct{ method, path, ctype, body string }
	cases := map[string][]attempt{
		"malformed request": {
			{"POST", "/v1/union", js, `{"sketches":["h"],"x":1}`},
			{"POST", "/v1/intersection", js, `{"sketches":["h"]}`},
			{"POST", "/v1/sketches/h/fold", js, `{"log2m":3}`},
			{"GET", "/v1/sketches/h/raw?log2m=3", "", ""},
			{"PUT", "/v1/sketches/.bad", js, `{}`},
			{"POST", "/v1/sketches/h/raw", "application/octet-stream", "\x14"},
		},
		"missing sketch": {
			{"POST", "/v1/union", js, `{"sketches":["h","nope"]}`},
			{"POST", "/v1/intersection", js, `{"sketches":["h","nope"]}`},
			{"POST", "/v1/sketches/nope/fold", js, `{"log2m":10}`},
			{"GET", "/v1/sketches/nope/raw?log2m=10", "", ""},
			{"GET", "/v1/sketches/nope/top", "", ""},
		},
		"wrong method": {
			{"DELETE", "/v1/union", "", ""},
			{"PUT", "/v1/intersection", "", ""},
		},
		"wrong sketch type": {
			{"POST", "/v1/union", js, `{"sketches":["h","c"]}`},
			{"POST", "/v1/union", js, `{"sketches":["c","h"]}`},
			{"POST", "/v1/intersection", js, `{"sketches":["h","c"]}`},
			{"POST", "/v1/intersection", js, `{"sketches":["c","h"]}`},
			{"POST", "/v1/union", js, `{"sketches":["h"],"into":"c"}`},
			{"POST", "/v1/sketches/c/fold", js, `{"log2m":10}`},
			{"GET", "/v1/sketches/c/raw?log2m=10", "", ""},
			{"GET", "/v1/sketches/h/top", "", ""},
			{"GET", "/v1/sketches/h/frequency?id=1", "", ""},
		},
		"parameters the stored sketch rules out": {
			{"POST", "/v1/sketches/h/fold", js, `{"log2m":12}`},
			{"GET", "/v1/sketches/h/raw?log2m=12", "", ""},
			{"POST", "/v1/sketches/h/raw", "application/octet-stream", string(hllHeader(1, 10, 5, true, 63))},
			{"PUT", "/v1/sketches/h", js, `{"log2m":12}`},
			{"POST", "/v1/union", js, `{"sketches":["c","c2"]}`},
			{"GET", "/v1/sketches/c2/top", "", ""},
		},
		"wrong media type": {
			{"POST", "/v1/union", "text/plain", `{"sketches":["h"]}`},
			{"POST", "/v1/intersection", "text/plain", `{"sketches":["h","he"]}`},
		},
	}
	for kind, attempts := range cases {
		want, ok := table[kind]
		if !ok {
			t.Errorf("the spec's table has no row %q", kind)
			continue
		}
		for _, a := range attempts {
			var header []string
			if a.ctype != "" {
				header = append(header, "Content-Type: "+a.ctype)
			}
			r := e.do(t, request{Method: a.method, Path: a.path, Body: strings.NewReader(a.body), Header: header})
			if r.Status != want {
				t.Errorf("%s: %s %s %s = %v, want %d as the spec's table says", kind, a.method, a.path, a.body, r, want)
			}
		}
	}
	if table["wrong sketch type"] != http.StatusConflict {
		t.Errorf("the spec gives a wrong sketch type %d, want 409", table["wrong sketch type"])
	}
}
