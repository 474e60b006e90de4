package airlift

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestBatchesDependOnBytesOnly: batches added to a sketch held in memory
// give the bytes of the same batches added to one decoded from its bytes
// before each batch, through the switch to dense (what makes a restart
// invisible in a stored sketch).
func TestBatchesDependOnBytesOnly(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 4))
	for _, p := range []int{4, 8, 12} {
		held, _ := New(Params{p})
		stored := held.AppendBinary(nil)
		v := uint64(0)
		// Small batches, so that some end just before the switch to
		// dense, until 20 past it.
		for after := 0; after < 20; {
			if held.Dense() {
				after++
			}
			batch := make([]uint64, 1+rng.IntN(8))
			for i := range batch {
				batch[i] = HashInt(int64(v))
				v++
			}
			held.AddHashes(batch)
			d, err := Decode(stored)
			if err != nil {
				t.Fatal(err)
			}
			d.AddHashes(batch)
			stored = d.AppendBinary(nil)
			if got := held.AppendBinary(nil); !bytes.Equal(got, stored) {
				t.Fatalf("seed %d, %d index bits, %d values: held %.40x, decoded %.40x", seed, p, v, got, stored)
			}
		}
	}
}

// TestMergeRules: sparse sketches merge whatever their index bits; dense
// ones only with the same, and a refused merge changes nothing.
func TestMergeRules(t *testing.T) {
	a := filled(t, 12, 100)
	b := filled(t, 10, 50)
	if err := a.Merge(b); err != nil || a.Params().IndexBits != 12 || a.Dense() {
		t.Errorf("sparse 12 ∪ sparse 10 = %v (%s, %d bits)", err, a.Representation(), a.Params().IndexBits)
	}
	dense := filled(t, 12, 20_000)
	other := filled(t, 10, 20_000)
	before := dense.AppendBinary(nil)
	for _, o := range []*Sketch{other, b} {
		if err := dense.Merge(o); !errors.Is(err, ErrPrecision) || !bytes.Equal(dense.AppendBinary(nil), before) {
			t.Errorf("dense 12 merging %s 10: %v", o.Representation(), err)
		}
	}
	if _, err := Union(b, dense); !errors.Is(err, ErrPrecision) {
		t.Errorf("Union(sparse 10, dense 12) = %v", err)
	}
	// Commutative, idempotent, associative in what they count.
	x, y, z := filled(t, 12, 3000), filled(t, 12, 200), filled(t, 12, 60_000)
	xy, _ := Union(x, y)
	yx, _ := Union(y, x)
	xx, _ := Union(x, x)
	xyz1, _ := Union(xy, z)
	yz, _ := Union(y, z)
	xyz2, _ := Union(x, yz)
	if !bytes.Equal(xy.AppendBinary(nil), yx.AppendBinary(nil)) || !bytes.Equal(xx.AppendBinary(nil), x.AppendBinary(nil)) ||
		!bytes.Equal(xyz1.AppendBinary(nil), xyz2.AppendBinary(nil)) {
		t.Error("unions are not commutative, idempotent and associative")
	}
}
