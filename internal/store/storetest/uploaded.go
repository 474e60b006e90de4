package storetest

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/sketchd/sketchd/internal/dshll"
	"github.com/sketchd/sketchd/internal/freq"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/theta"
)

// uploadCase is bytes another library writes for a sketch that sketchd
// would encode otherwise.
type uploadCase struct {
	name string
	b    []byte
}

// foreignUploads returns one upload per kind whose own encoding differs
// from what other libraries write.
func foreignUploads(tb testing.TB) []uploadCase {
	tb.Helper()
	// java-hll writes FULL where postgresql-hll's rule picks SPARSE: log2m
	// 8, regwidth 5, explicit off, sparse on, 100 ids. Built here as the
	// FULL bytes of a sketch without sparse, with the sparse bit set.
	p := hll.Params{Log2m: 8, Regwidth: 5, Expthresh: 0, Sparse: false}
	h, err := hll.New(p)
	if err != nil {
		tb.Fatal(err)
	}
	for v := range int64(100) {
		h.AddInt64(v)
	}
	full, _ := h.MarshalBinary()
	full[2] |= 1 << 6
	// Java's compact theta bytes: p written as the float 1.0 in bytes 12-15.
	t, _ := theta.New(theta.DefaultParams())
	for v := range int64(500) {
		t.AddInt(v)
	}
	java, _ := t.MarshalBinary()
	binary.LittleEndian.PutUint32(java[12:], math.Float32bits(1))
	f, _ := freq.New(freq.DefaultParams())
	for v := range int64(300) {
		f.AddInt(v)
	}
	// DataSketches HLL: the updatable image Spark's hll_sketch_agg returns,
	// and a SET image whose coupons sit in another order than a decoded
	// set writes them (as Java's do after a rebuild).
	d, _ := dshll.New(dshll.Params{LgK: 10, Type: dshll.HLL4})
	for v := range int64(40) {
		d.AddInt(v)
	}
	upd, _ := d.AppendUpdatable(nil)
	set, _ := d.MarshalBinary()
	for i, j := 12, len(set)-4; i < j; i, j = i+4, j-4 {
		for k := range 4 {
			set[i+k], set[j+k] = set[j+k], set[i+k]
		}
	}
	return []uploadCase{
		{"java-hll FULL", full},
		{"DataSketches HLL updatable image", upd},
		{"DataSketches HLL set in another order", set},
		{"Java compact theta", java},
		{"compressed theta", t.AppendCompressed(nil)},
		{"Java IntegerSummary tuple", f.AppendJava(nil)},
		// An empty ZetaSketch HLL++ sketch without the empty sparse_data
		// field ZetaSketch's Java library writes: precision 15, sparse
		// 20, longs.
		{"ZetaSketch HLL++ without empty sparse data", []byte{0x08, 0x70, 0x10, 0x00, 0x18, 0x02, 0x20, 0x08, 0x82, 0x07, 0x04, 0x18, 0x0f, 0x20, 0x14}},
	}
}

// testKeepsUploaded: uploaded bytes come back as uploaded, also after a
// restart, until the next write (even one that changes nothing) re-encodes
// them as the kind does, as PostgreSQL keeps a value's bytes until it is
// next written.
func testKeepsUploaded(t *testing.T, in *Instance) {
	for i, c := range foreignUploads(t) {
		sk, err := sketch.DetectUpload(c.b)
		must(t, err, c.name+": decode")
		name := "up-" + string(rune('a'+i))
		_, _, err = in.Put(ctx, name, sk)
		must(t, err, c.name+": put")
		if got := raw(t, in, name); !bytes.Equal(got, c.b) {
			t.Errorf("%s: stored as %x, want the upload %x", c.name, clip(got), clip(c.b))
		}
		own, err := sk.Kind().Decode(c.b)
		must(t, err, c.name+": decode again")
		// The kind's own encoding of the contents after adding id 0 (already
		// in: it changes the estimate of none, a freq sketch's count):
		// a union of one, which keeps no bytes, then the add.
		fresh, err := own.Kind().Union([]sketch.Sketch{own})
		must(t, err, c.name+": union of one")
		zero, err := fresh.Kind().Prepare(Ints(0, 1))
		must(t, err, "prepare")
		_, err = fresh.Apply(zero, nil)
		must(t, err, "apply")
		reencoded := fresh.AppendBinary(nil)
		if bytes.Equal(reencoded, c.b) {
			t.Fatalf("%s: the kind's own encoding equals the upload; the case tests nothing", c.name)
		}
		in.Settle(t)
		in.Reopen(t)
		if got := raw(t, in, name); !bytes.Equal(got, c.b) {
			t.Errorf("%s: after a restart stored as %x, want the upload %x", c.name, clip(got), clip(c.b))
		}
		info, err := in.Describe(ctx, name)
		must(t, err, "describe")
		if info.SizeBytes != len(c.b) {
			t.Errorf("%s: describe size %d, want the upload's %d", c.name, info.SizeBytes, len(c.b))
		}
		add(t, in, name, Ints(0, 1)) // an id already in: a write that changes nothing
		if got := raw(t, in, name); !bytes.Equal(got, reencoded) {
			t.Errorf("%s: after an add stored as %x, want the kind's encoding %x", c.name, clip(got), clip(reencoded))
		}
		in.Reopen(t)
		if got := raw(t, in, name); !bytes.Equal(got, reencoded) {
			t.Errorf("%s: after an add and a restart stored as %x, want %x", c.name, clip(got), clip(reencoded))
		}
	}
}
