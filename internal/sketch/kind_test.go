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
	t.Parallel()
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
