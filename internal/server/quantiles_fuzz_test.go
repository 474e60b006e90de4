package server

import (
	"bytes"
	"encoding/binary"
	"math"
	"net/http"
	"strings"
	"testing"
)

// The quantile kinds' routes with fuzzed query strings and bodies: a KLL
// sketch of doubles and one of longs, a Count-Min over a value domain and
// a Bloom filter. Every answer is a 2xx or a 4xx problem (do fails the
// test on a 5xx); a refused add or check-and-add, and every query,
// changes nothing.

var quantileFuzzSketches = []string{"lat", "sizes", "rc", "f"}

var quantileFuzzRoutes = []string{"quantile", "rank", "cdf", "pmf", "range", "add", "add?report=new", "check", "raw"}

// fuzzQuery keeps what a query string may carry unescaped, so that any
// fuzzed string makes a request.
func fuzzQuery(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || strings.ContainsRune("=&,.+-_", r) {
			return r
		}
		return -1
	}, s)
}

func FuzzQuantileKinds(f *testing.F) {
	e := newEnv(f, withConfig(func(c *Config) { c.MaxBody = tableMaxBody; c.MaxQueryBody = tableMaxQueryBody; c.MaxIDs = tableMaxIDs }))
	e.create(f, "lat", `{"type":"kll","k":8}`)
	e.create(f, "sizes", `{"type":"kll","items":"long"}`)
	e.create(f, "rc", `{"type":"cms","width":64,"depth":2,"domain_bits":12}`)
	e.create(f, "f", `{"type":"bloom","bits":4096,"hashes":3}`)
	must(f, e.send(f, http.MethodPost, "/v1/sketches/lat/add", "text/plain", "1\n2.5\n-3e2\n1000\n7\n8\n9\n10\n11\n12\n13\n14\n15\n"), http.StatusOK, "fill lat")
	must(f, e.postJSON(f, "/v1/sketches/sizes/add", `{"values":[5,-3,9223372036854775807,42]}`), http.StatusOK, "fill sizes")
	must(f, e.postJSON(f, "/v1/sketches/rc/add", `{"ids":[0,1,2,3,100,4095,2048]}`), http.StatusOK, "fill rc")
	must(f, e.postJSON(f, "/v1/sketches/f/add", `{"ids":[1,2,"alice"]}`), http.StatusOK, "fill f")

	le := func(v float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)) }
	for _, s := range []struct {
		sk, route uint8
		query     string
		ct        uint8
		body      []byte
	}{
		{0, 0, "q=0,0.5,0.99,1", 0, nil},
		{0, 0, "q=0.5&inclusive=false", 0, nil},
		{0, 0, "q=-0.1", 0, nil},
		{0, 1, "value=1,2.5,1e308", 0, nil},
		{0, 2, "split=1,5,10", 0, nil},
		{0, 3, "split=10,5", 0, nil},
		{0, 3, "split=1&x=1", 0, nil},
		{1, 1, "value=1.5", 0, nil},
		{1, 2, "split=-3,5", 0, nil},
		{1, 0, "q=0,0.5,1", 0, nil},
		{1, 1, "value=9223372036854775807,-9223372036854775808,9007199254740993", 0, nil},
		{1, 1, "value=9223372036854775808", 0, nil},
		{1, 2, "split=0,9223372036854775807", 0, nil},
		{1, 3, "split=-9223372036854775808,0,9223372036854775807&inclusive=false", 0, nil},
		{2, 4, "lo=0&hi=4095", 0, nil},
		{2, 4, "lo=5&hi=1", 0, nil},
		{2, 4, "lo=0&hi=4096", 0, nil},
		{2, 0, "q=0.5,0.99", 0, nil},
		{3, 0, "q=0.5", 0, nil},
		{0, 5, "", 0, []byte(`{"values":[1,2,3e-3]}`)},
		{0, 5, "byte_order=little", 3, le(4.5)},
		{0, 5, "byte_order=middle", 3, le(4.5)},
		{0, 5, "", 0, []byte(`{"values":[NaN]}`)},
		{1, 5, "", 0, []byte(`{"values":[1.5]}`)},
		{1, 5, "", 2, []byte("5\n-7\n")},
		{2, 5, "", 0, []byte(`{"ids":[4096]}`)},
		{3, 6, "", 0, []byte(`{"ids":[1,9,"bob",9]}`)},
		{3, 7, "", 0, []byte(`{"ids":[1,9]}`)},
		{3, 7, "", 1, []byte("1\n\"x\"\n")},
		{0, 6, "", 0, []byte(`{"ids":[1]}`)},
		{0, 8, "items=double", 3, []byte{0x05, 0x01, 0x0f, 0x08, 0xc8, 0x00, 0x08, 0x01}},
		{3, 8, "", 3, []byte{0xb1, 0, 3, 0}},
	} {
		f.Add(s.sk, s.route, s.query, s.ct, s.body)
	}
	f.Fuzz(func(t *testing.T, sk, route uint8, query string, ct uint8, body []byte) {
		name := quantileFuzzSketches[int(sk)%len(quantileFuzzSketches)]
		rt := quantileFuzzRoutes[int(route)%len(quantileFuzzRoutes)]
		path := "/v1/sketches/" + name + "/" + rt
		if q := fuzzQuery(query); q != "" {
			if strings.Contains(path, "?") {
				path += "&" + q
			} else {
				path += "?" + q
			}
		}
		before := e.raw(t, name)
		var r response
		write := false
		switch rt {
		case "quantile", "rank", "cdf", "pmf", "range":
			r = e.get(t, path)
		case "raw":
			// POST merges an upload into the sketch.
			write = true
			r = e.send(t, http.MethodPost, path, "application/octet-stream", string(body))
		default:
			write = rt != "check"
			var hdr []string
			if c := fuzzContentTypes[int(ct)%len(fuzzContentTypes)]; c != "" {
				hdr = append(hdr, "Content-Type: "+c)
			}
			r = e.do(t, request{Method: http.MethodPost, Path: path, Body: bytes.NewReader(body), Header: hdr})
		}
		if r.Status >= 200 && r.Status < 300 {
			if !write && !bytes.Equal(before, e.raw(t, name)) {
				t.Fatalf("%s %s changed %s", rt, path, name)
			}
			return
		}
		checkRefusal(t, r)
		if after := e.raw(t, name); !bytes.Equal(before, after) {
			t.Fatalf("refused %s (%v) changed %s", path, r, name)
		}
	})
}
