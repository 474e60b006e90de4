package server

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/freq"
	"github.com/sketchd/sketchd/internal/javatest"
	"github.com/sketchd/sketchd/internal/theta"
)

// TestFreqDownloadLayouts: a freq download is in Java's IntegerSummary
// layout (value, then mode) unless ?layout=cpp asks for the C++/Python
// int32; both upload back as the same sketch; layout on another kind, or
// an unknown layout, is a 400.
func TestFreqDownloadLayouts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "f", `{"type":"freq","lg_k":9}`)
	e.addIDs(t, "f", idsJSON(idRange(0, 2000)...), 2000)
	want, _ := freq.New(freq.Params{LgK: 9})
	for _, v := range idRange(0, 2000) {
		want.AddInt(v)
	}
	var orig sampledAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/f"), http.StatusOK, "describe").Body, &orig)
	java := want.AppendStoredWidth(nil, freq.SummaryJava)
	cpp := want.AppendStored(nil)
	for _, c := range []struct {
		query string
		want  []byte
	}{{"", java}, {"?layout=java", java}, {"?layout=cpp", cpp}} {
		got := must(t, e.get(t, "/v1/sketches/f/raw"+c.query), http.StatusOK, "download"+c.query).Body
		if !bytes.Equal(got, c.want) {
			t.Errorf("download%s: %d bytes, want %d (%s layout)", c.query, len(got), len(c.want), c.query)
		}
		up := "up" + strings.TrimPrefix(c.query, "?layout=")
		must(t, e.send(t, http.MethodPut, "/v1/sketches/"+up+"/raw", "application/octet-stream", string(got)), http.StatusCreated, "upload"+c.query)
		var d sampledAnswer
		decode(t, must(t, e.get(t, "/v1/sketches/"+up), http.StatusOK, "describe").Body, &d)
		if d.LgK != 9 || d.Cardinality != want.Estimate() || d.Impressions != orig.Impressions {
			t.Errorf("upload of download%s: %+v", c.query, d)
		}
	}
	if hex := string(must(t, e.get(t, "/v1/sketches/f/raw?layout=cpp&format=hex"), http.StatusOK, "hex").Body); !strings.HasPrefix(hex, `\x`) || len(hex) != 2+2*len(cpp) {
		t.Errorf("hex cpp download = %.40s…", hex)
	}
	e.create(t, "h", `{}`)
	e.create(t, "t", `{"type":"theta"}`)
	for _, q := range []string{"/v1/sketches/h/raw?layout=java", "/v1/sketches/t/raw?layout=cpp", "/v1/sketches/f/raw?layout=python", "/v1/sketches/f/raw?layout=", "/v1/sketches/f/raw?compressed=true", "/v1/sketches/h/raw?log2m=10&layout=java"} {
		p := checkProblem(t, e.get(t, q), http.StatusBadRequest)
		if !strings.Contains(p.Detail, "layout") && !strings.Contains(p.Detail, "compressed") {
			t.Errorf("%s: detail %q names neither layout nor compressed", q, p.Detail)
		}
	}
}

// TestThetaCompressedOverHTTP: ?compressed=true downloads serial version
// 4, which uploads back (as do Java's update-sketch bytes) and is then
// served as uploaded until the next add.
func TestThetaCompressedOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "t", `{"type":"theta","lg_k":10}`)
	e.addIDs(t, "t", idsJSON(idRange(0, 5000)...), 5000)
	want := thetaOf(t, 10, idRange(0, 5000)...)
	got := must(t, e.get(t, "/v1/sketches/t/raw?compressed=true"), http.StatusOK, "compressed download").Body
	if !bytes.Equal(got, want.AppendCompressed(nil)) || got[1] != 4 {
		t.Fatalf("compressed download %x…, want serial version 4 %x…", got[:16], want.AppendCompressed(nil)[:16])
	}
	if plain := must(t, e.get(t, "/v1/sketches/t/raw?compressed=false"), http.StatusOK, "plain").Body; !bytes.Equal(plain, want.AppendStored(nil)) {
		t.Error("compressed=false differs from the stored form")
	}
	must(t, e.send(t, http.MethodPut, "/v1/sketches/c/raw", "application/octet-stream", string(got)), http.StatusCreated, "upload compressed")
	var d sampledAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/c"), http.StatusOK, "describe").Body, &d)
	if d.Type != "theta" || d.Cardinality != want.Estimate() {
		t.Errorf("compressed upload = %+v, want estimate %v", d, want.Estimate())
	}
	if back := e.raw(t, "c"); !bytes.Equal(back, got) {
		t.Error("the compressed upload is not served as uploaded")
	}
	e.addIDs(t, "c", idsJSON(9_000_000), 1)
	if back := e.raw(t, "c"); back[1] != 3 {
		t.Errorf("after an add the sketch is still served in serial version %d", back[1])
	}
}

// TestUploadNamesItsFormat: an upload no kind reads is refused naming
// what it looks like, one that looks like a kind but is damaged names
// that kind, and ?format= decodes as the named kind only.
func TestUploadNamesItsFormat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	th := thetaOf(t, 12, idRange(0, 100)...)
	compressed := th.AppendCompressed(nil)
	badSeed := bytes.Clone(compressed)
	binary.LittleEndian.PutUint16(badSeed[6:], 0x1234)
	javaUnion := []byte{4, 3, 4, 12, 0, 0, 0xcc, 0x93}
	dsHLL := []byte{2, 1, 7, 12, 5, 0, 8, 0, 0x11, 0x22, 0x33, 0x44}
	kll := []byte{2, 2, 15, 0, 200, 0, 8, 0}
	req := []byte{2, 1, 17, 0, 12, 0, 0, 0}
	zeta := []byte{0x08, 0x70, 0x10, 0x03}
	airlift := []byte{3, 12, 0, 0}
	airliftBad := []byte{2, 12, 2, 0, 0x40, 0, 0, 0, 0x40, 0, 0, 0}
	hllBad := []byte{0x14, 0x8e, 0x7f, 0}
	for _, c := range []struct {
		name, query string
		body        []byte
		want        []string
	}{
		{"theta with another seed", "", badSeed, []string{"DataSketches theta", "seed hash"}},
		{"theta union", "", javaUnion, []string{"DataSketches theta union", "family 4", "does not read"}},
		{"damaged DataSketches HLL", "", dsHLL, []string{"DataSketches HLL", "not a valid ds_hll", "8 coupons at byte 6"}},
		{"damaged DataSketches KLL", "", kll, []string{"DataSketches' compact KLL", "not a valid kll", "flags 0x00 in a single item's preamble"}},
		{"DataSketches REQ", "", req, []string{"DataSketches REQ", "family 17", "does not read"}},
		{"damaged ZetaSketch", "", zeta, []string{"ZetaSketch", "not a valid zeta_hll", "encoding version 1"}},
		{"cut airlift", "", airlift, []string{"airlift HyperLogLog", "not a valid airlift_hll", "dense image of 4 bytes"}},
		{"damaged airlift", "", airliftBad, []string{"airlift HyperLogLog", "not a valid airlift_hll", "sparse entry 1 at byte 8 is not above"}},
		{"damaged hll", "", hllBad, []string{"postgresql-hll", "not a valid hll"}},
		{"garbage", "", []byte("hello world"), []string{"no format sketchd recognizes", "0x68656c6c6f20776f"}},
		{"theta named hll", "?format=hll", compressed, []string{"not a valid hll", "looks like a DataSketches theta"}},
		{"unknown format", "?format=parquet", compressed, []string{"format", "parquet"}},
	} {
		p := checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/x/raw"+c.query, "application/octet-stream", string(c.body)), http.StatusBadRequest)
		for _, w := range c.want {
			if !strings.Contains(p.Detail, w) {
				t.Errorf("%s: detail %q lacks %q", c.name, p.Detail, w)
			}
		}
		if strings.Contains(p.Detail, "schema version") && !strings.Contains(c.name, "hll") {
			t.Errorf("%s: detail %q gives the hll format's complaint", c.name, p.Detail)
		}
	}
	// Named correctly, the same bytes upload.
	must(t, e.send(t, http.MethodPut, "/v1/sketches/x/raw?format=theta", "application/octet-stream", string(compressed)), http.StatusCreated, "format=theta")
	must(t, e.send(t, http.MethodPost, "/v1/sketches/x/raw?format=theta", "application/octet-stream", string(compressed)), http.StatusOK, "merge format=theta")
	// Java's update sketch (family 2) and compact bytes with p = 1.0f.
	table := make([]uint64, 1<<8)
	for _, h := range th.Hashes(nil) {
		i, _ := theta.Slot(table, 8, h)
		table[i] = h
	}
	upd := []byte{0xc3, 3, 2, 12, 8, 0, 0xcc, 0x93}
	upd = binary.LittleEndian.AppendUint32(upd, uint32(th.Retained()))
	upd = binary.LittleEndian.AppendUint32(upd, math.Float32bits(1))
	upd = binary.LittleEndian.AppendUint64(upd, theta.MaxTheta)
	for _, h := range table {
		upd = binary.LittleEndian.AppendUint64(upd, h)
	}
	must(t, e.send(t, http.MethodPut, "/v1/sketches/upd/raw", "application/octet-stream", string(upd)), http.StatusCreated, "update sketch")
	var d sampledAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/upd"), http.StatusOK, "describe").Body, &d)
	if d.Type != "theta" || d.LgK != 12 || d.Cardinality != 100 {
		t.Errorf("update sketch uploaded as %+v", d)
	}
}

// java is the JVM the server's Java interoperability test shares.
var java javatest.Shared

// TestJavaReadsDownloads: what a plain download gives, Java's
// DataSketches reads as the sketch described (a freq sketch in its
// default layout, a theta sketch plain and compressed), and Java's own
// bytes upload with the estimate Java gives them and come back as
// uploaded.
func TestJavaReadsDownloads(t *testing.T) {
	t.Parallel()
	jvm := java.Get(t)
	e := newEnv(t)
	e.create(t, "f", `{"type":"freq","lg_k":10}`)
	e.create(t, "t", `{"type":"theta","lg_k":10}`)
	for _, n := range []string{"f", "t"} {
		e.addIDs(t, n, idsJSON(idRange(0, 20000)...), 20000)
	}
	must(t, e.postJSON(t, "/v1/sketches/f/add", `{"items":[`+itemsJSON(idRange(0, 5000), 4)+`]}`), http.StatusOK, "items")
	var f, th sampledAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/f"), http.StatusOK, "describe f").Body, &f)
	decode(t, must(t, e.get(t, "/v1/sketches/t"), http.StatusOK, "describe t").Body, &th)
	num := func(s string) float64 {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return math.Float64frombits(uint64(v))
	}
	r := jvm.Call(t, "freq_read", hex.EncodeToString(e.raw(t, "f")))
	if est, lb, ub := num(r[1]), num(r[2]), num(r[3]); est != f.Cardinality || math.Abs(lb-f.Lower) > 1e-6*lb || math.Abs(ub-f.Upper) > 1e-6*ub {
		t.Errorf("Java reads the freq download as estimate %v [%v, %v], described %+v", est, lb, ub, f)
	}
	for _, q := range []string{"", "?compressed=true"} {
		r := jvm.Call(t, "theta_read", hex.EncodeToString(must(t, e.get(t, "/v1/sketches/t/raw"+q), http.StatusOK, "download").Body))
		if est, lb, ub := num(r[1]), num(r[3]), num(r[6]); est != th.Cardinality || math.Abs(lb-th.Lower) > 1e-6*lb || math.Abs(ub-th.Upper) > 1e-6*ub {
			t.Errorf("Java reads the theta download%s as estimate %v [%v, %v], described %+v", q, est, lb, ub, th)
		}
	}
	// Java's bytes: compact, compressed and update theta sketches, a
	// compact tuple sketch.
	tb := jvm.Call(t, "theta_build", "11", "0", "30000", "-")
	fb := jvm.Call(t, "freq_build", "11", "0", "30000", "0", "100", "5")
	for i, c := range []struct {
		hex      string
		estimate string
	}{{tb[0], tb[3]}, {tb[1], tb[3]}, {tb[2], tb[3]}, {fb[0], fb[1]}} {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		name := "java" + strconv.Itoa(i)
		must(t, e.send(t, http.MethodPut, "/v1/sketches/"+name+"/raw", "application/octet-stream", string(b)), http.StatusCreated, "upload Java's bytes")
		var d sampledAnswer
		decode(t, must(t, e.get(t, "/v1/sketches/"+name), http.StatusOK, "describe").Body, &d)
		if d.Cardinality != num(c.estimate) {
			t.Errorf("Java's bytes %.16s… uploaded with estimate %v, Java's %v", c.hex, d.Cardinality, num(c.estimate))
		}
		if back := e.raw(t, name); !bytes.Equal(back, b) {
			t.Errorf("Java's bytes %.16s… come back as %x…", c.hex, back[:min(16, len(back))])
		}
	}
}
