package server

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/api"
	"github.com/sketchd/sketchd/internal/metrics"
)

// restart stops the server, closes and reopens its store, and serves a
// new server over it with the same configuration, as a restart of the
// process would (the codes the old one answered are checked first).
func (e *env) restart(tb testing.TB) {
	tb.Helper()
	e.srv.Close()
	e.checkObservedCodes(tb)
	e.db.Reopen(tb)
	e.reg = metrics.NewRegistry()
	src, _ := e.db.Store.(metrics.Source)
	m := metrics.New(e.reg, metrics.Options{Source: src, Quantiles: []float64{0.5, 0.9, 0.99}})
	e.s = New(e.cfg, Deps{Store: e.db.Store, Metrics: m, MetricsHandler: metrics.Handler(e.reg, nil), OpenAPI: api.Spec(), Console: sharedConsole(tb)})
	e.srv = httptest.NewServer(e.s)
}

// sparkHLL8 is what Apache Spark 4.3's hll_sketch_agg(id, 4) writes for
// the ids 50001..150000: a DataSketches HLL_8 updatable image in HLL
// mode, 16 registers. Uploaded to an earlier sketchd, its registers were
// later overwritten by other requests' bodies.
const sparkHLL8 = "0a0107040000000a6190821f1678f7400000000000c05d3f000000000000000000000000000000000d0e0c0e0d0f0c0e0e0d0f0d0f0c0c10"

// uploaded is a sketch uploaded as a test's library wrote it.
type uploaded struct {
	name  string
	query string // the upload's query (?items=long)
	bytes []byte
}

// keptState is what must not change about an uploaded sketch: its
// bytes, its whole description, and (for a kind with unions) the union
// of it with itself, which reads every register.
type keptState struct {
	raw      []byte
	describe string
	union    string
}

func (e *env) keptState(tb testing.TB, u uploaded) keptState {
	tb.Helper()
	st := keptState{
		raw:      e.raw(tb, u.name),
		describe: string(must(tb, e.get(tb, "/v1/sketches/"+u.name), http.StatusOK, "describe "+u.name).Body),
	}
	if !strings.HasPrefix(u.name, "kll") {
		st.union = string(must(tb, e.postJSON(tb, "/v1/union", `{"sketches":["`+u.name+`","`+u.name+`"]}`), http.StatusOK, "union of "+u.name).Body)
	}
	return st
}

// busy sends the traffic that once rewrote an upload: text, JSON and
// octet-stream bodies of ids, large and small, to another sketch (which
// exists), and uploads of other bytes.
func (e *env) busy(tb testing.TB) {
	tb.Helper()
	var text strings.Builder
	for i := 1; i <= 200000; i++ {
		text.WriteString(strconv.Itoa(i))
		text.WriteByte('\n')
	}
	for range 3 {
		must(tb, e.send(tb, http.MethodPost, "/v1/sketches/other/add?id_type=int", "text/plain", text.String()), http.StatusOK, "text add")
		must(tb, e.send(tb, http.MethodPost, "/v1/sketches/other/add", "application/octet-stream", octetIDs(idRange(0, 30000)...)), http.StatusOK, "octet add")
		must(tb, e.postJSON(tb, "/v1/sketches/other/add", idsJSON(idRange(0, 20000)...)), http.StatusOK, "json add")
		must(tb, e.send(tb, http.MethodPut, "/v1/sketches/other2/raw", "application/octet-stream", string(bytes.Repeat([]byte{0xee}, 3000))), http.StatusBadRequest, "junk upload")
	}
}

// checkUploadsKept uploads every sketch of ups, then checks that its
// bytes, estimate and self-union survive unrelated traffic and a
// restart, and that the upload is unchanged by a merge of itself.
func checkUploadsKept(t *testing.T, e *env, ups []uploaded) {
	t.Helper()
	e.create(t, "other", `{"type":"hll"}`)
	before := map[string]keptState{}
	for _, u := range ups {
		must(t, e.send(t, http.MethodPut, "/v1/sketches/"+u.name+"/raw"+u.query, "application/octet-stream", string(u.bytes)), http.StatusCreated, "upload "+u.name)
		st := e.keptState(t, u)
		// (A kll sketch of longs is kept marked as longs, byte 7.)
		if !bytes.Equal(st.raw, u.bytes) && u.query != "?items=long" {
			t.Fatalf("%s: uploaded %x…, read back at once as %x…", u.name, clipBytes(u.bytes), clipBytes(st.raw))
		}
		before[u.name] = st
	}
	check := func(when string) {
		t.Helper()
		for _, u := range ups {
			st, want := e.keptState(t, u), before[u.name]
			if !bytes.Equal(st.raw, want.raw) {
				t.Errorf("%s %s: the upload's bytes changed to %x… (were %x…)", u.name, when, clipBytes(st.raw), clipBytes(want.raw))
			}
			if st.describe != want.describe {
				t.Errorf("%s %s: described as\n%s\nwas\n%s", u.name, when, st.describe, want.describe)
			}
			if st.union != want.union {
				t.Errorf("%s %s: its union with itself is\n%s\nwas\n%s", u.name, when, st.union, want.union)
			}
		}
	}
	e.busy(t)
	check("after unrelated requests")
	e.restart(t)
	check("after a restart")
	e.busy(t)
	check("after a restart and more requests")
}

// TestUploadsKeepTheirBytes: an uploaded sketch is the store's own. Its
// bytes, estimate and registers (read by a union) are unchanged by later
// requests to other sketches and by a restart: Spark's ds_hll image, and
// sketchd's own ds_hll downloads in HLL mode re-uploaded, in every
// target type.
func TestUploadsKeepTheirBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	spark, err := hex.DecodeString(sparkHLL8)
	if err != nil {
		t.Fatal(err)
	}
	ups := []uploaded{{name: "spark", bytes: spark}}
	for _, tgt := range []string{"HLL_4", "HLL_6", "HLL_8"} {
		name := "own" + tgt[4:]
		e.create(t, name, `{"type":"ds_hll","lg_k":10,"tgt_type":"`+tgt+`"}`)
		e.addIDs(t, name, idsJSON(idRange(0, 20000)...), 20000)
		ups = append(ups, uploaded{name: "up" + tgt[4:], bytes: e.raw(t, name)})
	}
	checkUploadsKept(t, e, ups)
}

// TestJavaUploadsKeepTheirBytes: the same for the bytes DataSketches',
// ZetaSketch's and airlift's Java libraries write, in every format
// sketchd reads from them, each in the representations a union reads
// in place.
func TestJavaUploadsKeepTheirBytes(t *testing.T) {
	t.Parallel()
	jvm := java.Get(t)
	e := newEnv(t)
	var ups []uploaded
	add := func(name, query, hexBytes string) {
		b, err := hex.DecodeString(hexBytes)
		if err != nil {
			t.Fatal(err)
		}
		ups = append(ups, uploaded{name: name, query: query, bytes: b})
	}
	for _, tgt := range []string{"HLL_4", "HLL_6", "HLL_8"} {
		for _, lgK := range []string{"4", "11"} {
			r := jvm.Call(t, "hll_build", lgK, tgt, "0", "30000", "-")
			add(fmt.Sprintf("dshll%s-%s-compact", tgt[4:], lgK), "", r[0])
			add(fmt.Sprintf("dshll%s-%s-updatable", tgt[4:], lgK), "", r[1])
		}
	}
	r := jvm.Call(t, "cpc_build", "10", "0", "30000", "-")
	add("cpc", "", r[0])
	r = jvm.Call(t, "theta_build", "10", "0", "30000", "-")
	add("theta-compact", "", r[0])
	add("theta-compressed", "", r[1])
	add("theta-update", "", r[2])
	r = jvm.Call(t, "freq_build", "10", "0", "30000", "0", "100", "5")
	add("freq", "", r[0])
	r = jvm.Call(t, "zeta_build", "12", "0", "longs", "0", "30000", "1", "-")
	add("zeta", "", r[0])
	r = jvm.Call(t, "airlift_build", "11", "0", "30000", "-")
	add("airlift", "", r[0])
	vals := make([]string, 3000)
	for i := range vals {
		vals[i] = fmt.Sprintf("%016x", uint64(i*7919))
	}
	r = jvm.Call(t, "kll_build", "long", "200", strings.Join(vals, ","), "-", "-", "-")
	add("kll-longs", "?items=long", r[0])
	for i := range vals {
		vals[i] = fmt.Sprintf("%016x", math.Float64bits(float64(i)/7))
	}
	r = jvm.Call(t, "kll_build", "double", "200", strings.Join(vals, ","), "-", "-", "-")
	add("kll-doubles", "?items=double", r[0])
	checkUploadsKept(t, e, ups)
}

// pyUploads builds, with DataSketches' Python library (the C++ one
// underneath), one sketch of each image sketchd reads from it: ds_hll in
// every target type, compact and updatable, at lg_k 4 (HLL mode) and 11;
// cpc; theta compact and compressed; a tuple sketch of integer counts
// (freq) in the C++ summary layout; KLL doubles. It prints them as a JSON
// object of name to hex.
const pyUploads = `
import json
import datasketches as ds
out = {}
for tgt in ("HLL_4", "HLL_6", "HLL_8"):
    for lg_k in (4, 11):
        h = ds.hll_sketch(lg_k, getattr(ds.tgt_hll_type, tgt))
        for i in range(30000):
            h.update(i)
        out["dshll%s-%d-compact" % (tgt[4:], lg_k)] = h.serialize_compact().hex()
        out["dshll%s-%d-updatable" % (tgt[4:], lg_k)] = h.serialize_updatable().hex()
c = ds.cpc_sketch(10)
t = ds.update_theta_sketch(10)
f = ds.update_tuple_sketch(ds.AccumulatorPolicy(), 10)
for i in range(30000):
    c.update(i)
    t.update(i)
    f.update(i % 5000, 1)
out["cpc"] = c.serialize().hex()
out["theta-compact"] = t.compact().serialize().hex()
out["theta-compressed"] = t.compact().serialize(True).hex()
out["freq"] = f.compact().serialize(ds.PyIntsSerDe()).hex()
k = ds.kll_doubles_sketch(200)
for i in range(3000):
    k.update(i / 7)
out["kll-doubles"] = k.serialize().hex()
print(json.dumps(out))
`

// TestPythonUploadsKeepTheirBytes: the same for the bytes DataSketches'
// Python library writes, in every format sketchd reads from it. (It has
// no KLL sketch of 64-bit integers; the Java test uploads those.)
func TestPythonUploadsKeepTheirBytes(t *testing.T) {
	t.Parallel()
	if out, err := exec.Command("python3", "-c", "import datasketches").CombinedOutput(); err != nil {
		if os.Getenv("SKETCHD_REQUIRE_DATASKETCHES") == "1" {
			t.Fatalf("DataSketches' Python library is required (SKETCHD_REQUIRE_DATASKETCHES=1): python3 cannot import datasketches: %s", out)
		}
		t.Skipf("skipping: python3 cannot import datasketches (install the datasketches Python package): %s", out)
	}
	cmd := exec.Command("python3", "-c", pyUploads)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("building the Python library's sketches: %v\n%s", err, stderr.String())
	}
	var images map[string]string
	if err := json.Unmarshal(res, &images); err != nil {
		t.Fatal(err)
	}
	var ups []uploaded
	for _, name := range slices.Sorted(maps.Keys(images)) {
		b, err := hex.DecodeString(images[name])
		if err != nil {
			t.Fatal(err)
		}
		u := uploaded{name: "py-" + name, bytes: b}
		if strings.HasPrefix(name, "kll") {
			u.query = "?items=double"
		}
		ups = append(ups, u)
	}
	checkUploadsKept(t, newEnv(t), ups)
}
