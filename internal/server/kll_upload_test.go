package server

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/kll"
)

// libraryLongs is what a DataSketches library writes for a sketch of
// longs 0..n-1 (Spark's kll_sketch_agg_bigint, Java's KllLongsSketch):
// sketchd's bytes with byte 7 as the libraries write it, 0.
func libraryLongs(tb testing.TB, k, n int) ([]byte, *kll.Sketch[int64]) {
	tb.Helper()
	s, err := kll.New[int64](k)
	if err != nil {
		tb.Fatal(err)
	}
	for v := range int64(n) {
		s.Update(v)
	}
	b := s.AppendBinary(nil)
	b[7] = 0
	return b, s
}

func libraryDoubles(tb testing.TB, vals ...float64) []byte {
	tb.Helper()
	s, _ := kll.New[float64](200)
	for _, v := range vals {
		s.Update(v)
	}
	return s.AppendBinary(nil)
}

// TestKLLUploadNeedsItems: the bytes of a library's KLL sketch do not say
// whether it keeps doubles or longs. An upload that would create a sketch
// from such bytes without ?items= is a 400 naming items=long|double and
// creates nothing; into an existing KLL sketch, its item type decides;
// bytes that say it (sketchd's byte 7, Java 3.2 to 4.0's flag 8) need no
// parameter.
func TestKLLUploadNeedsItems(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	spark, engine := libraryLongs(t, 200, 100_064)
	median, _ := engine.View().Quantile(0.5, true)

	before := e.snapshot(t)
	for _, c := range []struct{ what, path, ctype, body string }{
		{"binary", "/v1/sketches/spark/raw", "application/octet-stream", string(spark)},
		{"hex", "/v1/sketches/spark/raw", "text/plain", pgHex(spark)},
		{"format=kll", "/v1/sketches/spark/raw?format=kll", "application/octet-stream", string(spark)},
		{"doubles", "/v1/sketches/spark/raw", "application/octet-stream", string(libraryDoubles(t, 1.5, 2.5))},
		{"empty", "/v1/sketches/spark/raw", "application/octet-stream", string(libraryDoubles(t))},
	} {
		p := checkProblem(t, e.send(t, http.MethodPut, c.path, c.ctype, c.body), http.StatusBadRequest)
		if !strings.Contains(p.Detail, "send ?items=long or ?items=double") || !strings.Contains(p.Detail, `no sketch "spark"`) {
			t.Errorf("%s: %q", c.what, p.Detail)
		}
	}
	checkProblem(t, e.send(t, http.MethodPost, "/v1/sketches/spark/raw", "application/octet-stream", string(spark)), http.StatusNotFound)
	if diff := before.diff(e.snapshot(t)); len(diff) > 0 {
		t.Errorf("refused uploads changed %v", diff)
	}

	// With ?items=long: the median Spark answers, exactly.
	must(t, e.send(t, http.MethodPut, "/v1/sketches/spark/raw?items=long", "application/octet-stream", string(spark)), http.StatusCreated, "upload with items=long")
	var qa longQuantiles
	getLongs(t, e, "/v1/sketches/spark/quantile?q=0.5", &qa)
	if deref(qa.Quantiles[0].Value) != median || median < 49_000 || median > 51_000 {
		t.Errorf("median = %v, engine %d", deref(qa.Quantiles[0].Value), median)
	}
	// Into the existing sketch of longs the same bytes need no parameter:
	// replaced, then merged, as longs.
	must(t, e.send(t, http.MethodPut, "/v1/sketches/spark/raw", "application/octet-stream", string(spark)), http.StatusOK, "replace without items")
	if got := e.raw(t, "spark"); got[7] != byte(kll.Longs) || !slices.Equal(got[8:], spark[8:]) {
		t.Errorf("replaced without items: %x…", got[:16])
	}
	must(t, e.send(t, http.MethodPost, "/v1/sketches/spark/raw", "text/plain", pgHex(spark)), http.StatusOK, "merge without items")
	var d longDescribe
	decode(t, must(t, e.get(t, "/v1/sketches/spark"), http.StatusOK, "describe").Body, &d)
	if d.Items != "long" || d.N != 2*100_064 || deref(d.Max) != int64(100_063) {
		t.Errorf("after a merge without items: %+v", d)
	}

	// Into an existing sketch of doubles the library's doubles are doubles.
	e.create(t, "lat", `{"type":"kll"}`)
	must(t, e.send(t, http.MethodPut, "/v1/sketches/lat/raw", "application/octet-stream", string(libraryDoubles(t, 1.5, 2.5))), http.StatusOK, "doubles into doubles")
	// The longs read as the doubles the stored sketch keeps are not a KLL
	// sketch of anything (subnormals out of order, or not finite): the
	// refusal says what they were taken for.
	neg, _ := kll.New[int64](200)
	neg.Update(-1)
	neg.Update(5)
	negLib := neg.AppendBinary(nil)
	negLib[7] = 0
	p := checkProblem(t, e.send(t, http.MethodPost, "/v1/sketches/lat/raw", "application/octet-stream", string(negLib)), http.StatusBadRequest)
	if !strings.Contains(p.Detail, "looks like DataSketches' compact KLL of doubles but is not a valid kll sketch") {
		t.Errorf("longs merged into doubles: %q", p.Detail)
	}
	e.create(t, "h", `{"log2m":11}`)
	checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/h/raw", "application/octet-stream", string(spark)), http.StatusConflict)

	// sketchd's own bytes say longs.
	must(t, e.send(t, http.MethodPut, "/v1/sketches/own/raw", "application/octet-stream", string(e.raw(t, "spark"))), http.StatusCreated, "sketchd's longs")
	decode(t, must(t, e.get(t, "/v1/sketches/own"), http.StatusOK, "describe own").Body, &d)
	if d.Items != "long" {
		t.Errorf("sketchd's longs uploaded as %s", d.Items)
	}
	// Java 3.2 to 4.0 set flag 8 in a sketch of doubles.
	java4 := libraryDoubles(t, 1.5, 2.5, -7)
	java4[3] |= 8
	must(t, e.send(t, http.MethodPut, "/v1/sketches/j4/raw", "application/octet-stream", string(java4)), http.StatusCreated, "Java 4.0's doubles")
	if got, want := e.raw(t, "j4"), libraryDoubles(t, 1.5, 2.5, -7); !bytes.Equal(got, want) {
		t.Errorf("Java 4.0's doubles download as %x, not %x", got, want)
	}
	p = checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/j4l/raw?items=long", "application/octet-stream", string(java4)), http.StatusBadRequest)
	if !strings.Contains(p.Detail, "flag 8 marks a sketch of doubles") {
		t.Errorf("Java 4.0's doubles as longs: %q", p.Detail)
	}
	// With ?items=double a library's doubles create a sketch of doubles.
	must(t, e.send(t, http.MethodPut, "/v1/sketches/d/raw?items=double", "application/octet-stream", string(libraryDoubles(t, 3))), http.StatusCreated, "items=double")
}

// TestKLLBucketImportItems: a series says what it keeps, so a library's
// KLL bytes imported into a bucket (one, or many as NDJSON) are read as
// the series' items: Spark's longs into a series of longs answer exactly.
func TestKLLBucketImportItems(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", `{"type":"kll","items":"long","tz":"UTC","levels":{"day":"P400D"}}`), http.StatusCreated, "create longs")
	must(t, e.send(t, http.MethodPut, "/v1/series/dbl", "application/json", `{"type":"kll","tz":"UTC","levels":{"day":"P400D"}}`), http.StatusCreated, "create doubles")
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -10)
	spark, engine := libraryLongs(t, 200, 100_064)
	big := []byte(nil)
	{
		s, _ := kll.New[int64](200)
		for _, v := range []int64{minLong, 0, maxLong} {
			s.Update(v)
		}
		big = s.AppendBinary(nil)
		big[7] = 0
	}
	must(t, e.send(t, http.MethodPut, bucketPath("day", day), "application/octet-stream", string(spark)), http.StatusOK, "import Spark's longs")
	rng := "&from=" + rfc(day) + "&to=" + rfc(day.AddDate(0, 0, 1))
	var qa longQuantiles
	getLongs(t, e, "/v1/series/s/quantile?q=0.5"+rng, &qa)
	if want, _ := engine.View().Quantile(0.5, true); deref(qa.Quantiles[0].Value) != want {
		t.Errorf("median of the imported bucket = %v, engine %d", deref(qa.Quantiles[0].Value), want)
	}
	next := day.AddDate(0, 0, 1)
	line := `{"level":"day","start":"` + next.Format(time.RFC3339) + `","bytes":"` + base64.StdEncoding.EncodeToString(big) + `"}` + "\n"
	must(t, e.send(t, http.MethodPut, "/v1/series/s/buckets", "application/x-ndjson", line), http.StatusOK, "import many")
	checkEnds(t, e, "/v1/series/s", "&from="+rfc(next)+"&to="+rfc(next.AddDate(0, 0, 1)))

	// A series of doubles reads a library's doubles as doubles and refuses
	// bytes that say longs.
	path := "/v1/series/dbl/buckets/day/" + url.PathEscape(day.Format(time.RFC3339))
	must(t, e.send(t, http.MethodPut, path, "application/octet-stream", string(libraryDoubles(t, 0.5, 1.5))), http.StatusOK, "doubles into doubles")
	checkProblem(t, e.send(t, http.MethodPut, path, "application/octet-stream", string(kll.MarkLongs(spark))), http.StatusConflict)
	e.create(t, "x", `{"log2m":11}`)
	must(t, e.send(t, http.MethodPut, "/v1/series/h", "application/json", `{"log2m":11,"tz":"UTC","levels":{"day":"P400D"}}`), http.StatusCreated, "create hll series")
	p := checkProblem(t, e.send(t, http.MethodPut, "/v1/series/h/buckets/day/"+url.PathEscape(day.Format(time.RFC3339)), "application/octet-stream", string(spark)), http.StatusConflict)
	if !strings.Contains(p.Detail, "kll") {
		t.Errorf("a kll upload into an hll series: %q", p.Detail)
	}
}
