package sparktest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// parquetPrefix fills d with the sketches a Parquet listing's tests read:
// ds_hll sketches of every tgt_type at several lg_k, from a few ids
// (LIST mode) to tens of thousands (HLL mode), and theta sketches, of
// overlapping id ranges so that their unions differ from sums; a
// postgresql-hll sketch and a KLL sketch, which Spark does not read,
// ride along; one sketch outside the prefix must stay out. It returns
// the names under the prefix, in name order.
func parquetPrefix(t *testing.T, d *sketchd) []string {
	t.Helper()
	type sk struct {
		name   string
		params obj
		add    obj
	}
	var sks []sk
	for i, c := range []struct {
		lgK    int
		tgt    string
		lo, hi int64
	}{
		{12, "HLL_4", 0, 20_000},
		{11, "HLL_6", 10_000, 40_000},
		{14, "HLL_8", 30_000, 35_000},
		{12, "HLL_8", 5, 12},
		{13, "HLL_4", 39_990, 60_000},
	} {
		sks = append(sks, sk{fmt.Sprintf("pq:ds%d", i), obj{"type": "ds_hll", "lg_k": c.lgK, "tgt_type": c.tgt}, obj{"ids": ids(c.lo, c.hi, false)}})
	}
	for i, c := range []struct {
		lgK    int
		lo, hi int64
	}{{10, 0, 9_000}, {11, 5_000, 30_000}, {12, 100, 300}} {
		sks = append(sks, sk{fmt.Sprintf("pq:th%d", i), obj{"type": "theta", "lg_k": c.lgK}, obj{"ids": ids(c.lo, c.hi, false)}})
	}
	sks = append(sks,
		sk{"pq:hll", obj{"type": "hll", "log2m": 12}, obj{"ids": ids(0, 5000, false)}},
		sk{"pq:kll", obj{"type": "kll", "items": "long"}, obj{"values": ids(-50, 50, false)}},
		sk{"pq:ds_empty", obj{"type": "ds_hll"}, nil},
		sk{"pr:outside", obj{"type": "ds_hll"}, obj{"ids": ids(0, 10, false)}},
	)
	var names []string
	for _, s := range sks {
		d.create(t, s.name, s.params)
		if s.add != nil {
			d.add(t, s.name, s.add)
		}
		if strings.HasPrefix(s.name, "pq:") {
			names = append(names, s.name)
		}
	}
	slices.Sort(names)
	return names
}

// parquetFile downloads GET /v1/sketches?prefix=…&format=parquet into a
// file of the test's and returns its path.
func (d *sketchd) parquetFile(t *testing.T, prefix string) string {
	t.Helper()
	b := d.do(t, http.MethodGet, "/v1/sketches?prefix="+prefix+"&format=parquet&limit=1000", "", nil, http.StatusOK)
	p := filepath.Join(t.TempDir(), "sketches.parquet")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// estimate is the estimate a sketch's description gives: the column
// estimate must equal it.
func (d *sketchd) estimate(t *testing.T, name string) float64 {
	t.Helper()
	desc := d.describe(t, name)
	if desc.str(t, "type") == "kll" {
		return desc.num(t, "n")
	}
	return desc.num(t, "cardinality")
}

// TestParquetSpark: Spark reads a prefix's Parquet listing as a table, one
// row per sketch with sketchd's name, kind, estimate and bytes; its
// hll_sketch_estimate and theta_sketch_estimate of each row's bytes are
// sketchd's estimate, and its unions over the table's ds_hll and theta
// rows (hll_union_agg, theta_union_agg) are sketchd's unions of the same
// sketches.
func TestParquetSpark(t *testing.T) {
	s := spark.Get(t)
	d := newSketchd(t)
	names := parquetPrefix(t, d)
	path := d.parquetFile(t, "pq:")
	table := "parquet.`" + path + "`"

	rows := s.MustQuery(t, "SELECT name, kind, estimate, bytes FROM "+table+" ORDER BY name", nil)
	if len(rows) != len(names) {
		t.Fatalf("Spark reads %d rows, want %d: %v", len(rows), len(names), rows)
	}
	kinds := map[string][]string{}
	for i, r := range rows {
		name, _ := r[0].(string)
		kind, _ := r[1].(string)
		if name != names[i] {
			t.Errorf("row %d is %q, want %s", i, r[0], names[i])
			continue
		}
		kinds[kind] = append(kinds[kind], name)
		if want := d.describe(t, name).str(t, "type"); kind != want {
			t.Errorf("%s: kind %q, described as %s", name, kind, want)
		}
		if got, want := r.Float(t, 2), d.estimate(t, name); got != want {
			t.Errorf("%s: estimate %v, sketchd's %v", name, got, want)
		}
		if got, want := r.Bytes(t, 3), d.raw(t, name, ""); !bytes.Equal(got, want) {
			t.Errorf("%s: bytes %x…, /raw %x…", name, got[:min(16, len(got))], want[:min(16, len(want))])
		}
	}
	for _, c := range []struct {
		kind, estimate, union string
	}{
		{"ds_hll", "hll_sketch_estimate(bytes)", "hll_sketch_estimate(hll_union_agg(bytes, true))"},
		{"theta", "theta_sketch_estimate(bytes)", "theta_sketch_estimate(theta_union_agg(bytes, 10))"},
	} {
		if len(kinds[c.kind]) < 3 {
			t.Fatalf("the table has %d %s rows, want several", len(kinds[c.kind]), c.kind)
		}
		for _, r := range s.MustQuery(t, fmt.Sprintf("SELECT name, %s, estimate FROM %s WHERE kind = '%s'", c.estimate, table, c.kind), nil) {
			if got, want := r.Int(t, 1), rounded(r.Float(t, 2)); got != want {
				t.Errorf("%s: Spark's %s = %d, sketchd's estimate %d", r[0], c.estimate, got, want)
			}
		}
		got := s.One(t, fmt.Sprintf("SELECT %s FROM %s WHERE kind = '%s'", c.union, table, c.kind), nil).Int(t, 0)
		want := rounded(d.union(t, kinds[c.kind]...).num(t, "cardinality"))
		if got != want {
			t.Errorf("Spark's union of the table's %s rows (%s) = %d, sketchd's union of %v %d", c.kind, c.union, got, kinds[c.kind], want)
		}
	}
}

// pyarrowScript reads a Parquet file with pyarrow and prints its schema
// and rows as JSON, bytes in hex.
const pyarrowScript = `
import json, sys
import pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
print(json.dumps({
    "schema": {f.name: str(f.type) for f in t.schema},
    "rows": [dict(r, bytes=r["bytes"].hex()) for r in t.to_pylist()],
}))
`

// PyArrow is the pyarrow release the Parquet test reads with (.ci/run
// installs it with pip).
const PyArrow = "25.0.1"

// python3With returns python3 when it imports module at version, else
// skips t (fails it when the environment variable require is 1).
func python3With(t *testing.T, module, version, require string) string {
	t.Helper()
	skip := func(why string) {
		if os.Getenv(require) == "1" {
			t.Fatalf("%s=1 but %s", require, why)
		}
		t.Skipf("skipping: %s (pip install %s==%s; %s=1 makes this a failure)", why, module, version, require)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		skip("python3 is not on PATH")
	}
	out, err := exec.Command(py, "-c", "import importlib.metadata, "+module+"; print(importlib.metadata.version('"+module+"'))").CombinedOutput()
	if err != nil {
		skip("python3 cannot import " + module + ": " + lastLine(out))
	}
	if v := strings.TrimSpace(string(out)); v != version {
		skip(fmt.Sprintf("python3 has %s %s, and the test pins %s", module, v, version))
	}
	return py
}

// TestParquetPyarrow: pyarrow, Parquet's reference reader outside Go,
// reads a prefix's listing with the documented column types, and each
// row's name, kind, parameters and estimate are sketchd's and its bytes
// are /raw's.
func TestParquetPyarrow(t *testing.T) {
	py := python3With(t, "pyarrow", PyArrow, "SKETCHD_REQUIRE_PYARROW")
	d := newSketchd(t)
	names := parquetPrefix(t, d)
	path := d.parquetFile(t, "pq:")
	out, err := exec.Command(py, "-c", pyarrowScript, path).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("pyarrow: %v\n%s", err, stderr)
	}
	var got struct {
		Schema map[string]string
		Rows   []struct {
			Name, Kind, Parameters, Bytes string
			Estimate                      float64
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("pyarrow printed %s: %v", clip(string(out)), err)
	}
	wantSchema := map[string]string{"name": "string", "kind": "string", "parameters": "string", "estimate": "double", "bytes": "binary"}
	if fmt.Sprint(got.Schema) != fmt.Sprint(wantSchema) {
		t.Errorf("pyarrow reads the columns as %v, want %v", got.Schema, wantSchema)
	}
	if len(got.Rows) != len(names) {
		t.Fatalf("pyarrow reads %d rows, want %d", len(got.Rows), len(names))
	}
	for i, r := range got.Rows {
		if r.Name != names[i] {
			t.Errorf("row %d is %q, want %s", i, r.Name, names[i])
			continue
		}
		desc := d.describe(t, r.Name)
		if r.Kind != desc.str(t, "type") {
			t.Errorf("%s: kind %q, described as %s", r.Name, r.Kind, desc.str(t, "type"))
		}
		if want := d.estimate(t, r.Name); r.Estimate != want || math.IsNaN(r.Estimate) {
			t.Errorf("%s: estimate %v, sketchd's %v", r.Name, r.Estimate, want)
		}
		var params map[string]any
		if err := json.Unmarshal([]byte(r.Parameters), &params); err != nil || len(params) == 0 {
			t.Errorf("%s: parameters %q are not a JSON object of parameters", r.Name, r.Parameters)
		}
		for k, v := range params {
			if fmt.Sprint(desc[k]) != fmt.Sprint(v) {
				t.Errorf("%s: parameter %s = %v, described as %v", r.Name, k, v, desc[k])
			}
		}
		if want := hex.EncodeToString(d.raw(t, r.Name, "")); r.Bytes != want {
			t.Errorf("%s: bytes %.32s…, /raw %.32s…", r.Name, r.Bytes, want)
		}
	}
}
