package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
)

// readParquet reads a Parquet listing with parquet-go's reader: its rows,
// the rows of each row group and the file's key-value metadata.
func readParquet(tb testing.TB, b []byte) (rows []parquetRow, groups []int, meta map[string]string) {
	tb.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		tb.Fatalf("the listing is not a Parquet file: %v", err)
	}
	meta = map[string]string{}
	for _, kv := range f.Metadata().KeyValueMetadata {
		meta[kv.Key] = kv.Value
	}
	for _, rg := range f.RowGroups() {
		groups = append(groups, int(rg.NumRows()))
	}
	if got := f.Schema().Columns(); !slices.EqualFunc(got, [][]string{{"name"}, {"kind"}, {"parameters"}, {"estimate"}, {"bytes"}}, slices.Equal) {
		tb.Errorf("columns %v, want name, kind, parameters, estimate, bytes", got)
	}
	r := parquet.NewGenericReader[parquetRow](f)
	defer r.Close()
	rows = make([]parquetRow, f.NumRows())
	n, err := r.Read(rows)
	if err != nil && !errors.Is(err, io.EOF) {
		tb.Fatalf("reading rows: %v", err)
	}
	if n != len(rows) {
		tb.Fatalf("read %d rows of %d", n, len(rows))
	}
	return rows, groups, meta
}

// getParquet lists path (with format=parquet) and checks the answer is a
// Parquet file.
func (e *env) getParquet(tb testing.TB, path string) response {
	tb.Helper()
	r := must(tb, e.get(tb, path), http.StatusOK, "GET "+path)
	if ct := r.Header.Get("Content-Type"); ct != parquetMediaType {
		tb.Fatalf("GET %s answered Content-Type %q, want %s", path, ct, parquetMediaType)
	}
	return r
}

// TestListParquet: a prefix of sketches of every kind listed as Parquet
// holds one row per sketch in name order, with the type, the parameters
// (which create the same sketch again), the estimate and the bytes the
// sketch's own routes give; sketches outside the prefix are not in it.
func TestListParquet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	kinds := map[string]string{
		"pq:airlift": `{"type":"airlift_hll","index_bits":10}`,
		"pq:bloom":   `{"type":"bloom","expected_items":1000,"fpp":0.01}`,
		"pq:cms":     `{"type":"cms","width":64,"depth":3,"topk":2}`,
		"pq:cpc":     `{"type":"cpc","lg_k":10}`,
		"pq:dshll":   `{"type":"ds_hll","lg_k":11,"tgt_type":"HLL_6"}`,
		"pq:freq":    `{"type":"freq","lg_k":9}`,
		"pq:hll":     `{"log2m":11,"regwidth":5,"expthresh":0,"sparse":false,"metric":true}`,
		"pq:kll":     `{"type":"kll","k":100}`,
		"pq:kll.l":   `{"type":"kll","items":"long"}`,
		"pq:theta":   `{"type":"theta","lg_k":10}`,
		"pq:zeta":    `{"type":"zeta_hll","precision":12}`,
		"pq:empty":   `{"type":"theta"}`,
	}
	for name, body := range kinds {
		e.create(t, name, body)
		switch {
		case name == "pq:empty":
		case strings.HasPrefix(name, "pq:kll"):
			e.addIDs(t, name, `{"values":[3,1,4,1,5,9,2,6]}`, 8)
		case name == "pq:cms" || name == "pq:freq":
			e.addIDs(t, name, `{"items":[{"id":1,"count":3},{"id":"x","count":2}]}`, 2)
		default:
			e.addIDs(t, name, idsJSON(idRange(0, 3000)...), 3000)
		}
	}
	e.create(t, "pr", `{}`)
	e.create(t, "other", `{"type":"theta"}`)

	r := e.getParquet(t, "/v1/sketches?prefix=pq:&format=parquet")
	if r.Header.Get("Sketchd-Next") != "" {
		t.Errorf("a whole listing names a next page %q", r.Header.Get("Sketchd-Next"))
	}
	rows, _, meta := readParquet(t, r.Body)
	var names []string
	for n := range kinds {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(rows) != len(names) {
		t.Fatalf("%d rows, want %d", len(rows), len(names))
	}
	if _, ok := meta["sketchd.next"]; ok {
		t.Errorf("the file of a last page names a next one: %v", meta)
	}
	for i, row := range rows {
		if row.Name != names[i] {
			t.Errorf("row %d is %s, want %s (name order)", i, row.Name, names[i])
			continue
		}
		var d map[string]any
		decode(t, must(t, e.get(t, "/v1/sketches/"+row.Name), http.StatusOK, "describe").Body, &d)
		if row.Kind != d["type"] {
			t.Errorf("%s: kind %q, described as %v", row.Name, row.Kind, d["type"])
		}
		// The estimate /metrics would export: a count, a total, the values
		// held, the items a filter holds.
		var want float64
		switch row.Kind {
		case "cms":
			want = d["total"].(float64)
		case "kll":
			want = d["n"].(float64)
		case "bloom":
			want = d["estimated_items"].(float64)
		default:
			want = d["cardinality"].(float64)
		}
		if row.Estimate != want {
			t.Errorf("%s: estimate %v, described as %v", row.Name, row.Estimate, want)
		}
		if row.Name != "pq:empty" && row.Estimate == 0 {
			t.Errorf("%s: estimate 0", row.Name)
		}
		if raw := e.raw(t, row.Name); !bytes.Equal(row.Bytes, raw) {
			t.Errorf("%s: bytes %x, /raw gives %x", row.Name, clipBytes(row.Bytes), clipBytes(raw))
		}
		// The parameters are the kind's, as described, and create the
		// same sketch (200), not another (409).
		var params map[string]any
		if err := json.Unmarshal([]byte(row.Parameters), &params); err != nil {
			t.Fatalf("%s: parameters %q are not a JSON object: %v", row.Name, row.Parameters, err)
		}
		fields := strings.Fields(kindFields[sketch.Type(row.Kind)])
		for k, v := range params {
			if !slices.Contains(fields, k) {
				t.Errorf("%s: parameter %s is not one of the kind's (%v)", row.Name, k, fields)
			}
			if fmt.Sprint(d[k]) != fmt.Sprint(v) {
				t.Errorf("%s: parameter %s = %v, described as %v", row.Name, k, v, d[k])
			}
		}
		params["type"] = row.Kind
		params["metric"] = d["metric"]
		body, _ := json.Marshal(params)
		must(t, e.send(t, http.MethodPut, "/v1/sketches/"+row.Name, "application/json", string(body)), http.StatusOK, "create "+row.Name+" again with "+string(body))
		recreate := "pq:again:" + strings.TrimPrefix(row.Name, "pq:")
		e.create(t, recreate, string(body))
		var d2 map[string]any
		decode(t, must(t, e.get(t, "/v1/sketches/"+recreate), http.StatusOK, "describe").Body, &d2)
		for _, f := range fields {
			if fmt.Sprint(d2[f]) != fmt.Sprint(d[f]) {
				t.Errorf("%s created from the row's parameters has %s = %v, the listed sketch %v", recreate, f, d2[f], d[f])
			}
		}
	}
	if want := `{"expthresh":0,"log2m":11,"regwidth":5,"sparse":false}`; rows[slices.IndexFunc(rows, func(r parquetRow) bool { return r.Name == "pq:hll" })].Parameters != want {
		t.Errorf("pq:hll's parameters are not %s", want)
	}
}

// TestListParquetEmpty: a prefix nothing starts with is a valid Parquet
// file with the columns and no rows.
func TestListParquetEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "a", `{}`)
	rows, groups, _ := readParquet(t, e.getParquet(t, "/v1/sketches?prefix=zzz&format=parquet").Body)
	if len(rows) != 0 || len(groups) > 1 {
		t.Errorf("%d rows in %d row groups, want none", len(rows), len(groups))
	}
}

// TestListParquetPages: thousands of sketches list as Parquet a page at
// a time, as the JSON list pages (?limit=, ?after= from Sketchd-Next), in
// row groups of at most parquetGroupRows rows and parquetGroupBytes of
// sketch bytes (a larger sketch alone): the server holds one row group
// at a time.
func TestListParquetPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 2500
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("many:%05d", i))
	}
	var events []any
	for lo := 0; lo < n; lo += 100 {
		events = append(events, map[string]any{"id": 7, "sketches": names[lo:min(lo+100, n)]})
	}
	b, _ := json.Marshal(map[string]any{"events": events})
	must(t, e.postJSON(t, "/v1/events?create=true", string(b)), http.StatusOK, "events")
	// FULL HLLs of 114,688 bytes: 36 fill a row group by bytes.
	big := encode(t, hllOf(t, hll.Params{Log2m: 17, Regwidth: 7, Expthresh: 0, Sparse: false}, 1, 2, 3))
	for i := 100; i < 200; i++ {
		must(t, e.send(t, http.MethodPut, "/v1/sketches/"+names[i]+"/raw", "application/octet-stream", string(big)), http.StatusOK, "upload")
	}
	// The JSON list's pages, for comparison.
	var jsonNames []string
	for after := ""; ; {
		var page listResponse
		decode(t, must(t, e.get(t, "/v1/sketches?prefix=many:&limit=700&after="+after), http.StatusOK, "list").Body, &page)
		for _, s := range page.Sketches {
			jsonNames = append(jsonNames, s.(map[string]any)["name"].(string))
		}
		if after = page.Next; after == "" {
			break
		}
	}
	var got []string
	pages := 0
	for after := ""; ; pages++ {
		r := e.getParquet(t, "/v1/sketches?prefix=many:&format=parquet&limit=700&after="+after)
		rows, groups, meta := readParquet(t, r.Body)
		sizes := make([]int, 0, len(groups))
		i := 0
		for _, g := range groups {
			size := 0
			for _, row := range rows[i : i+g] {
				size += len(row.Bytes)
			}
			if g > parquetGroupRows || (g > 1 && size > parquetGroupBytes) {
				t.Errorf("a row group of %d rows and %d bytes of sketches, over %d rows or %d bytes", g, size, parquetGroupRows, parquetGroupBytes)
			}
			sizes = append(sizes, size)
			i += g
		}
		if pages == 0 && (len(groups) < 5 || !slices.ContainsFunc(sizes, func(s int) bool { return s > parquetGroupBytes/2 })) {
			t.Errorf("the first page's row groups hold %v rows and %v bytes: want several, some filled by bytes", groups, sizes)
		}
		for _, row := range rows {
			got = append(got, row.Name)
			if row.Name >= names[100] && row.Name < names[200] && !bytes.Equal(row.Bytes, big) {
				t.Errorf("%s: bytes %x, uploaded %x", row.Name, clipBytes(row.Bytes), clipBytes(big))
			}
		}
		next := r.Header.Get("Sketchd-Next")
		if meta["sketchd.next"] != next {
			t.Errorf("the file names the next page %q, the header %q", meta["sketchd.next"], next)
		}
		if next == "" {
			break
		}
		if len(rows) != 700 || next != rows[len(rows)-1].Name {
			t.Fatalf("a page of %d rows ending %s says the next is after %q", len(rows), rows[len(rows)-1].Name, next)
		}
		after = next
	}
	if pages != 3 || !slices.Equal(got, names) || !slices.Equal(got, jsonNames) {
		t.Errorf("%d pages listed %d names, want 4 pages of the %d sketches in order, as the JSON list's %d", pages+1, len(got), n, len(jsonNames))
	}
}

// TestListParquetBadParams: a listing's query is read as strictly as the
// JSON list's, and refused before anything is written.
func TestListParquetBadParams(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "a", `{}`)
	for query, want := range map[string]string{
		"format=parquet&compression=zstd": `unknown query parameter "compression"`,
		"format=parquet&limit=0":          "limit",
		"format=parquet&limit=1001":       "limit",
		"format=parquet&prefix=a%20b":     "prefix",
		"format=csv":                      `format="csv" must be json (the default) or parquet`,
		"format=parquet&format=json":      `"format" is given 2 times`,
		"format=Parquet":                  "format",
	} {
		r := e.get(t, "/v1/sketches?"+query)
		p := checkProblem(t, r, http.StatusBadRequest)
		if !strings.Contains(p.Detail, want) {
			t.Errorf("?%s: %q, want it to name %s", query, p.Detail, want)
		}
	}
	// format=json is the JSON list.
	var page listResponse
	decode(t, must(t, e.get(t, "/v1/sketches?format=json"), http.StatusOK, "list").Body, &page)
	if len(page.Sketches) != 1 {
		t.Errorf("format=json listed %v", page.Sketches)
	}
}

// damagingStore is the real store, but for faults: name's record reads
// as damaged, and listings skip unreadable as the backends skip a record
// they cannot decode.
type damagingStore struct {
	Store
	name, unreadable string
}

func (d damagingStore) View(ctx context.Context, names []string, fn func([]sketch.Sketch) error) error {
	if slices.Contains(names, d.name) {
		return sketch.Errorf(sketch.Damaged, "stored sketch %q is damaged: its record failed its checksum", d.name)
	}
	return d.Store.View(ctx, names, fn)
}

func (d damagingStore) ListSkipping(ctx context.Context, prefix, after string, limit int) ([]sketch.Info, bool, []string, error) {
	infos, more, err := d.Store.List(ctx, prefix, after, limit)
	return infos, more, []string{`"` + d.unreadable + `"`}, err
}

// TestListParquetDamage: damage is never a quiet gap in a table. A record
// the listing cannot decode is named in Sketchd-Unreadable and in the
// file's metadata; a sketch found damaged when its row is read answers a
// 500 naming it when nothing was sent yet, and otherwise cuts the
// transfer, so the client gets an error and a file without its footer.
func TestListParquetDamage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		damaged string
		cut     bool
	}{{"", false}, {"d:0003", false}, {"d:0280", true}} {
		t.Run(tc.damaged, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, withStore(func(s Store) Store { return damagingStore{s, tc.damaged, "d:gone"} }))
			full := string(encode(t, hllOf(t, hll.Params{Log2m: 12, Regwidth: 5, Expthresh: 0, Sparse: false}, 1)))
			for i := range 300 {
				must(t, e.send(t, http.MethodPut, fmt.Sprintf("/v1/sketches/d:%04d/raw", i), "application/octet-stream", full), http.StatusCreated, "upload")
			}
			path := "/v1/sketches?prefix=d:&limit=1000&format=parquet"
			switch {
			case tc.damaged == "":
				r := e.getParquet(t, path)
				if got := r.Header.Get("Sketchd-Unreadable"); got != `"d:gone"` {
					t.Errorf("Sketchd-Unreadable %q, want \"d:gone\"", got)
				}
				rows, _, meta := readParquet(t, r.Body)
				if meta["sketchd.unreadable"] != `"d:gone"` || len(rows) != 300 {
					t.Errorf("%d rows, the file's sketchd.unreadable %q; want 300 and \"d:gone\"", len(rows), meta["sketchd.unreadable"])
				}
			case !tc.cut:
				// Not through e.do, which fails any 5xx.
				resp, err := e.srv.Client().Get(e.srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var p problem
				decode(t, body, &p)
				if resp.StatusCode != http.StatusInternalServerError || resp.Header.Get("Content-Type") != "application/problem+json" || p.Type != problemTypePrefix+"damaged" || !strings.Contains(p.Detail, tc.damaged) {
					t.Errorf("answer %d %s %+v, want a 500 problem of type damaged naming %s", resp.StatusCode, resp.Header.Get("Content-Type"), p, tc.damaged)
				}
				if cd := resp.Header.Get("Content-Disposition"); cd != "" {
					t.Errorf("the problem answer has Content-Disposition %q, as if it were the file", cd)
				}
			default:
				resp, err := e.srv.Client().Get(e.srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				if err == nil {
					t.Errorf("the transfer ended without an error after %d bytes", len(b))
				}
				if len(b) < 64<<10 {
					t.Errorf("%d bytes arrived before the cut; the test wants the first row group sent", len(b))
				}
				if _, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b))); err == nil {
					t.Error("what arrived before the cut opens as a Parquet file")
				}
			}
		})
	}
}

// BenchmarkListParquet streams a page of 1,000 FULL HLLs of 114,688
// bytes (109 MiB of Parquet) and reports, beside the rate, the largest
// heap the listing added to what the store holds (sampled every
// millisecond, the collector run at 2% growth so that the heap is close
// to what is live): about one row group's worth, whatever the page's
// length (docs/formats.md, "A prefix as a Parquet table").
func BenchmarkListParquet(b *testing.B) {
	e := newEnv(b)
	big := string(encode(b, hllOf(b, hll.Params{Log2m: 17, Regwidth: 7, Expthresh: 0, Sparse: false}, 1, 2, 3)))
	for i := range 1000 {
		must(b, e.send(b, http.MethodPut, fmt.Sprintf("/v1/sketches/m:%04d/raw", i), "application/octet-stream", big), http.StatusCreated, "upload")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(2))
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
		}
	}()
	b.SetBytes(int64(len(big)) * 1000)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := e.srv.Client().Get(e.srv.URL + "/v1/sketches?prefix=m:&limit=1000&format=parquet")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
	close(stop)
	<-done
	b.ReportMetric(float64(peak.Load()-min(peak.Load(), base.HeapAlloc))/(1<<20), "peak-heap-MiB")
}
