package sketch

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/zeta"
)

// TestZetaDeltaReplays: Apply's delta, replayed onto the state Apply
// started from, gives the same bytes, value count and type included;
// malformed deltas are refused and change nothing.
func TestZetaDeltaReplays(t *testing.T) {
	p := ZetaParams{zeta.ParamsFor(11)}
	s, _ := p.New()
	for _, ids := range [][]cms.ID{
		{cms.IntID(1), cms.IntID(2), cms.IntID(2)},
		nil,
		func() []cms.ID {
			ids := make([]cms.ID, 3000)
			for i := range ids {
				ids[i] = cms.IntID(int64(i))
			}
			return ids
		}(),
	} {
		b, err := zetaKind.Prepare(IDs(ids))
		if err != nil {
			t.Fatal(err)
		}
		before := s.Clone()
		delta, err := s.Apply(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) == 0 {
			if len(delta) != 0 {
				t.Errorf("an empty batch logged %x", delta)
			}
			continue
		}
		if err := before.ApplyDelta(delta); err != nil {
			t.Fatal(err)
		}
		if got, want := before.AppendBinary(nil), s.AppendBinary(nil); !bytes.Equal(got, want) {
			t.Errorf("%d ids: replayed %.40x, applied %.40x", len(ids), got, want)
		}
		for _, bad := range [][]byte{delta[:len(delta)-1], append(bytes.Clone(delta), 0), {1, 9, 1, 0, 0, 0, 0, 0, 0, 0, 0}, {}} {
			c := s.Clone()
			if err := c.ApplyDelta(bad); err == nil || !bytes.Equal(c.AppendBinary(nil), s.AppendBinary(nil)) {
				t.Errorf("ApplyDelta(%.24x) = %v or changed the sketch", bad, err)
			}
		}
	}
	z, _ := ZetaOf(s)
	if z.NumValues() != 3003 || z.ValueType() != zeta.TypeLong {
		t.Errorf("num_values %d type %v, want 3003 int64", z.NumValues(), z.ValueType())
	}
}

// TestZetaIDTypes: a batch mixing integers and strings is Invalid; ids
// of the other type than the sketch counts are a Conflict, refused by
// Check and Apply alike, changing nothing.
func TestZetaIDTypes(t *testing.T) {
	if _, err := zetaKind.Prepare(IDs([]cms.ID{cms.IntID(1), cms.TextID("a")})); KindOf(err) != Invalid {
		t.Errorf("mixed batch: %v", err)
	}
	s, _ := ZetaParams{zeta.DefaultParams()}.New()
	ints, _ := zetaKind.Prepare(IDs([]cms.ID{cms.IntID(1)}))
	strs, _ := zetaKind.Prepare(IDs([]cms.ID{cms.TextID("a")}))
	if _, err := s.Apply(ints, nil); err != nil {
		t.Fatal(err)
	}
	before := s.AppendBinary(nil)
	if err := s.Check(strs); KindOf(err) != Conflict {
		t.Errorf("Check(strings) on an int64 sketch = %v", err)
	}
	if _, err := s.Apply(strs, nil); KindOf(err) != Conflict || !bytes.Equal(s.AppendBinary(nil), before) {
		t.Errorf("Apply(strings) on an int64 sketch = %v", err)
	}
	other, _ := ZetaParams{zeta.DefaultParams()}.New()
	other.Apply(strs, nil)
	if err := s.Merge(other); KindOf(err) != Conflict || !errors.Is(err, zeta.ErrValueType) {
		t.Errorf("Merge(strings) into int64 = %v", err)
	}
	if _, err := zetaKind.Union([]Sketch{s, other}); KindOf(err) != Conflict {
		t.Errorf("Union(int64, strings) = %v", err)
	}
}
