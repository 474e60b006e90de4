package sketch_test

import (
	"bytes"
	"testing"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/sketch"
)

// TestAbsorbEqualsApply checks, for every registered kind and batch sizes
// that take an HLL through each representation, that Absorb leaves the
// same sketch as Apply.
func TestAbsorbEqualsApply(t *testing.T) {
	for _, k := range sketch.Kinds() {
		for _, n := range []int{0, 1, 7, 1500, 5000, 20000} {
			ids := make([]cms.ID, n)
			for i := range ids {
				ids[i] = cms.IntID(int64(i*7919 + n))
			}
			b, err := k.Prepare(sketch.IDs(ids))
			if err != nil {
				t.Fatalf("%s: prepare %d ids: %v", k.Type, n, err)
			}
			applied, err := k.Default().New()
			if err != nil {
				t.Fatal(err)
			}
			absorbed := applied.Clone()
			if _, err := applied.Apply(b, nil); err != nil {
				t.Fatalf("%s: apply %d ids: %v", k.Type, n, err)
			}
			if err := sketch.Absorb(absorbed, b); err != nil {
				t.Fatalf("%s: absorb %d ids: %v", k.Type, n, err)
			}
			if got, want := absorbed.AppendBinary(nil), applied.AppendBinary(nil); !bytes.Equal(got, want) {
				t.Errorf("%s, %d ids: Absorb gives %d bytes (%s) differing from Apply's %d (%s)",
					k.Type, n, len(got), absorbed.Representation(), len(want), applied.Representation())
			}
		}
	}
}

// FuzzChecked: a kind's Checked gives Decode's answer, its error or the
// parameters of the sketch Decode returns, for any bytes (the hll kind
// has a Check of its own; the others decode).
func FuzzChecked(f *testing.F) {
	for _, k := range sketch.Kinds() {
		sk, err := k.Default().New()
		if err != nil {
			f.Fatal(err)
		}
		b := sk.AppendBinary(nil)
		f.Add(k.Tag, b)
		f.Add(k.Tag, b[:len(b)/2])
	}
	hllTag := byte(1)
	f.Add(hllTag, []byte{0x10, 0x8e, 0x7f}) // UNDEFINED
	f.Add(hllTag, []byte{0x14, 0x6b, 0x7f})
	f.Fuzz(func(t *testing.T, tag byte, b []byte) {
		k, err := sketch.ByTag(tag)
		if err != nil {
			return
		}
		p, cerr := k.Checked(b)
		sk, derr := k.Decode(bytes.Clone(b))
		switch {
		case (cerr == nil) != (derr == nil):
			t.Fatalf("%s: Checked(%x) = %v, Decode: %v", k.Type, b, cerr, derr)
		case derr != nil:
			if cerr.Error() != derr.Error() {
				t.Fatalf("%s: Checked(%x) = %q, Decode: %q", k.Type, b, cerr, derr)
			}
		case p != sk.Params():
			t.Fatalf("%s: Checked(%x) = %+v, Decode: %+v", k.Type, b, p, sk.Params())
		}
	})
}
