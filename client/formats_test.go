package client_test

import (
	"bytes"
	"testing"

	"github.com/sketchd/sketchd/client"
)

// TestRawFormats: the download options reach the server (a freq sketch's
// two layouts differ by one byte per entry; a theta sketch's compressed
// form is serial version 4) and WithFormat names an upload's kind.
func TestRawFormats(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()
	if _, _, err := c.Create(ctx, "f", client.CreateRequest{Type: client.TypeFreq}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Create(ctx, "t", client.CreateRequest{Type: client.TypeTheta, LgK: 10}); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 3000)
	for i := range ids {
		ids[i] = int64(i)
	}
	for _, n := range []string{"f", "t"} {
		if _, err := c.AddInts(ctx, n, ids); err != nil {
			t.Fatal(err)
		}
	}
	java, err := c.Raw(ctx, "f", client.RawOptions{Layout: "java"})
	if err != nil {
		t.Fatal(err)
	}
	cpp, err := c.Raw(ctx, "f", client.RawOptions{Layout: "cpp"})
	if err != nil {
		t.Fatal(err)
	}
	if len(java.Data)-len(cpp.Data) != 3000 {
		t.Errorf("java layout %d bytes, cpp %d: want one mode byte per entry more", len(java.Data), len(cpp.Data))
	}
	packed, err := c.Raw(ctx, "t", client.RawOptions{Compressed: true})
	if err != nil || len(packed.Data) < 2 || packed.Data[1] != 4 {
		t.Fatalf("Raw(t, compressed) = %x, %v; want serial version 4", packed.Data[:min(8, len(packed.Data))], err)
	}
	if _, _, err := c.PutRaw(ctx, "t2", packed.Data, client.WithFormat("hll")); !client.IsInvalid(err) {
		t.Errorf("PutRaw(theta bytes as hll) = %v, want invalid", err)
	}
	sk, created, err := c.PutRaw(ctx, "t2", packed.Data, client.WithFormat("theta"))
	if err != nil || !created || sk.Type != client.TypeTheta {
		t.Fatalf("PutRaw(theta bytes as theta) = %+v, %v, %v", sk, created, err)
	}
	if _, err := c.MergeRaw(ctx, "t2", packed.Data, client.WithFormat("theta")); err != nil {
		t.Errorf("MergeRaw(format theta) = %v", err)
	}
	back, err := c.Raw(ctx, "t", client.RawOptions{})
	if err != nil || bytes.Equal(back.Data, packed.Data) {
		t.Errorf("plain download equals the compressed one")
	}
}

// TestDSHLL: a DataSketches HLL is created, added to, described and
// unioned through the client with its own parameters.
func TestDSHLL(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()
	sk, created, err := c.Create(ctx, "d", client.CreateRequest{Type: client.TypeDSHLL, LgK: 10, TgtType: "HLL_6"})
	if err != nil || !created || sk.Type != client.TypeDSHLL || sk.LgK != 10 || sk.TgtType != "HLL_6" || sk.Representation != "LIST" {
		t.Fatalf("Create(ds_hll) = %+v, %v, %v", sk, created, err)
	}
	if _, _, err := c.Create(ctx, "e", client.CreateRequest{Type: client.TypeDSHLL, LgK: 12}); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 5000)
	for i := range ids {
		ids[i] = int64(i)
	}
	for _, n := range []string{"d", "e"} {
		if _, err := c.AddInts(ctx, n, ids); err != nil {
			t.Fatal(err)
		}
	}
	if sk, err = c.Describe(ctx, "d"); err != nil || sk.Representation != "HLL" || sk.LowerBound > 5000 || sk.UpperBound < 5000 || sk.StdError <= 0 {
		t.Fatalf("Describe(d) = %+v, %v", sk, err)
	}
	u, err := c.Union(ctx, client.UnionRequest{Sketches: client.Names("d", "e")})
	if err != nil || u.Type != client.TypeDSHLL || u.LgK != 10 || u.TgtType != "HLL_6" || u.LowerBound > 5000 || u.UpperBound < 5000 {
		t.Fatalf("Union(d, e) = %+v, %v", u, err)
	}
}

// TestZetaHLL: a ZetaSketch HLL++ sketch is created, added to, described
// and unioned through the client with its own parameters.
func TestZetaHLL(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()
	none := 0
	sk, created, err := c.Create(ctx, "z", client.CreateRequest{Type: client.TypeZetaHLL, Precision: 12, SparsePrecision: &none})
	if err != nil || !created || sk.Type != client.TypeZetaHLL || sk.Precision != 12 || sk.SparsePrecision != 0 || sk.Representation != "NORMAL" || sk.ValueType != "unknown" {
		t.Fatalf("Create(zeta_hll) = %+v, %v, %v", sk, created, err)
	}
	if _, _, err := c.Create(ctx, "y", client.CreateRequest{Type: client.TypeZetaHLL}); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 5000)
	for i := range ids {
		ids[i] = int64(i)
	}
	for _, n := range []string{"z", "y"} {
		if _, err := c.AddInts(ctx, n, ids); err != nil {
			t.Fatal(err)
		}
	}
	if sk, err = c.Describe(ctx, "y"); err != nil || sk.Precision != 15 || sk.SparsePrecision != 20 || sk.Representation != "SPARSE" || sk.ValueType != "int64" || sk.NumValues != 5000 ||
		sk.LowerBound > 5000 || sk.UpperBound < 5000 || sk.StdError <= 0 {
		t.Fatalf("Describe(y) = %+v, %v", sk, err)
	}
	u, err := c.Union(ctx, client.UnionRequest{Sketches: client.Names("z", "y")})
	if err != nil || u.Type != client.TypeZetaHLL || u.Precision != 12 || u.SparsePrecision != 0 || u.NumValues != 10000 || u.LowerBound > 5000 || u.UpperBound < 5000 {
		t.Fatalf("Union(z, y) = %+v, %v", u, err)
	}
}

// TestAirliftHLL: an airlift HyperLogLog is created, added to, described
// and unioned through the client with its own parameters.
func TestAirliftHLL(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()
	sk, created, err := c.Create(ctx, "a", client.CreateRequest{Type: client.TypeAirliftHLL, IndexBits: 10})
	if err != nil || !created || sk.Type != client.TypeAirliftHLL || sk.IndexBits != 10 || sk.Representation != "SPARSE" {
		t.Fatalf("Create(airlift_hll) = %+v, %v, %v", sk, created, err)
	}
	ids := make([]int64, 5000)
	for i := range ids {
		ids[i] = int64(i)
	}
	if _, err := c.AddInts(ctx, "a", ids); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Create(ctx, "b", client.CreateRequest{Type: client.TypeAirliftHLL, IndexBits: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddInts(ctx, "b", ids[:100]); err != nil {
		t.Fatal(err)
	}
	if sk, err = c.Describe(ctx, "a"); err != nil || sk.IndexBits != 10 || sk.Representation != "DENSE" || sk.LowerBound > 5000 || sk.UpperBound < 5000 || sk.StdError <= 0 {
		t.Fatalf("Describe(a) = %+v, %v", sk, err)
	}
	u, err := c.Union(ctx, client.UnionRequest{Sketches: client.Names("a", "b")})
	if err != nil || u.Type != client.TypeAirliftHLL || u.IndexBits != 10 || u.LowerBound > 5000 || u.UpperBound < 5000 {
		t.Fatalf("Union(a, b) = %+v, %v", u, err)
	}
}
