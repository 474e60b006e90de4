package server

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
)

// TestConcurrentTraffic runs writers adding to the same and to different
// sketches (JSON, octet and text bodies) while readers union, intersect,
// download, list and describe. Every request must succeed, and at the end
// every sketch must hold exactly the HLL built in process from the ids
// sent to it.
func TestConcurrentTraffic(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	params := map[string]hll.Params{}
	for i, spec := range []string{
		`{}`,
		`{"log2m":11,"regwidth":4}`,
		`{"log2m":12,"expthresh":0}`,
		`{"log2m":10,"sparse":false,"expthresh":256}`,
	} {
		name := fmt.Sprintf("s%d", i)
		e.create(t, name, spec)
		var d hllResponse
		decode(t, must(t, e.get(t, "/v1/sketches/"+name), 200, "describe").Body, &d)
		params[name] = hll.Params{Log2m: d.Log2m, Regwidth: d.Regwidth, Expthresh: d.Expthresh, Sparse: d.Sparse}
	}
	names := []string{"s0", "s1", "s2", "s3"}

	const (
		writers  = 6
		requests = 20
		batch    = 150
	)
	var (
		mu   sync.Mutex
		sent = map[string][]int64{}
	)
	fail := func(format string, args ...any) { t.Errorf(format, args...) }
	var wg, readers sync.WaitGroup
	done := make(chan struct{})
	for g := range writers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for j := range requests {
				// Writers share sketches, and ids overlap between writers.
				name := names[(g+j)%len(names)]
				if j%3 == 0 {
					name = "s0"
				}
				lo := int64(r.IntN(20_000))
				ids := idRange(lo, lo+batch)
				var rq request
				switch j % 3 {
				case 0:
					rq = request{Method: "POST", Path: "/v1/sketches/" + name + "/add", Body: strings.NewReader(idsJSON(ids...)), Header: []string{"Content-Type: application/json"}}
				case 1:
					rq = request{Method: "POST", Path: "/v1/sketches/" + name + "/add", Body: strings.NewReader(octetIDs(ids...)), Header: []string{"Content-Type: application/octet-stream"}}
				default:
					var b strings.Builder
					for _, v := range ids {
						fmt.Fprintln(&b, v)
					}
					rq = request{Method: "POST", Path: "/v1/sketches/" + name + "/add", Body: strings.NewReader(b.String()), Header: []string{"Content-Type: text/plain"}}
				}
				resp, err := e.try(t, rq)
				if err != nil || resp.Status != http.StatusOK {
					fail("writer %d: add to %s: %v %v", g, name, resp, err)
					return
				}
				mu.Lock()
				sent[name] = append(sent[name], ids...)
				mu.Unlock()
			}
		})
	}
	reads := []func(g, i int) request{
		func(g, i int) request {
			return request{Method: "POST", Path: "/v1/union", Body: strings.NewReader(`{"sketches":["s0","s1","s2","s3"]}`), Header: []string{"Content-Type: application/json"}}
		},
		func(g, i int) request {
			return request{Method: "POST", Path: "/v1/union", Body: strings.NewReader(fmt.Sprintf(`{"sketches":["s%d","s%d"],"into":"u%d"}`, i%4, (i+1)%4, g)), Header: []string{"Content-Type: application/json"}}
		},
		func(g, i int) request {
			return request{Method: "POST", Path: "/v1/intersection", Body: strings.NewReader(`{"sketches":["s0","s1"]}`), Header: []string{"Content-Type: application/json"}}
		},
		func(g, i int) request { return request{Method: "GET", Path: fmt.Sprintf("/v1/sketches/s%d/raw", i%4)} },
		func(g, i int) request { return request{Method: "GET", Path: "/v1/sketches?limit=3"} },
		func(g, i int) request { return request{Method: "GET", Path: fmt.Sprintf("/v1/sketches/s%d", i%4)} },
		func(g, i int) request { return request{Method: "GET", Path: "/v1/sketches/s1/raw?log2m=9&format=hex"} },
	}
	nreads := 0
	for g := range 3 {
		readers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				rq := reads[(g+i)%len(reads)](g, i)
				resp, err := e.try(t, rq)
				if err != nil || resp.Status != http.StatusOK {
					fail("reader %d: %s %s: %v %v", g, rq.Method, rq.Path, resp, err)
					return
				}
				if strings.HasSuffix(rq.Path, "/raw") {
					if _, err := hll.Decode(resp.Body); err != nil {
						fail("reader %d: downloaded %s does not decode: %v", g, rq.Path, err)
					}
				}
				mu.Lock()
				nreads++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if nreads < 10 {
		t.Errorf("only %d reads ran alongside the writes", nreads)
	}

	// Every sketch holds exactly what was sent to it.
	var built []*hll.Sketch
	for _, name := range names {
		want := hllOf(t, params[name], sent[name]...)
		built = append(built, want)
		if got := e.raw(t, name); !bytes.Equal(got, encode(t, want)) {
			t.Errorf("%s after %d ids = %x…, want %x…", name, len(sent[name]), clipBytes(got), clipBytes(encode(t, want)))
		}
	}
	// A union stored now is the union of those.
	must(t, e.postJSON(t, "/v1/union", `{"sketches":["s0","s1","s2","s3"],"into":"final"}`), 200, "final union")
	want, err := hll.Union(built...)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.raw(t, "final"); !bytes.Equal(got, encode(t, want)) {
		t.Errorf("final union = %x…, want %x…", clipBytes(got), clipBytes(encode(t, want)))
	}
	for g := range 3 {
		if r := e.get(t, fmt.Sprintf("/v1/sketches/u%d/raw", g)); r.Status == http.StatusOK {
			if _, err := hll.Decode(r.Body); err != nil {
				t.Errorf("u%d does not decode: %v", g, err)
			}
		}
	}
}

// TestCreateAddRacesDelete: add?create=true on a name that another
// client keeps creating as a Count-Min and deleting must never answer 404:
// the name either exists (its kind's add) or is created.
func TestCreateAddRacesDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	stop := make(chan struct{})
	var flippers, adders sync.WaitGroup
	for range 2 {
		flippers.Add(1)
		go func() {
			defer flippers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				e.send(t, "PUT", "/v1/sketches/flip", "application/json", `{"type":"cms","width":50,"depth":2}`)
				e.send(t, "DELETE", "/v1/sketches/flip", "", "")
			}
		}()
	}
	var mu sync.Mutex
	notFound := 0
	const adds = 4 * 300
	for a := range 4 {
		adders.Add(1)
		go func() {
			defer adders.Done()
			for i := range adds / 4 {
				r := e.postJSON(t, "/v1/sketches/flip/add?create=true", fmt.Sprintf(`{"ids":[%d]}`, a*1000+i))
				switch r.Status {
				case http.StatusOK, http.StatusConflict: // added, or an HLL add met a fresh Count-Min
				case http.StatusNotFound:
					mu.Lock()
					notFound++
					mu.Unlock()
				default:
					t.Errorf("add?create=true = %d %s", r.Status, r.Body)
				}
			}
		}()
	}
	adders.Wait()
	close(stop)
	flippers.Wait()
	if notFound > 0 {
		t.Errorf("add?create=true answered 404 %d times of %d", notFound, adds)
	}
}
