package sketch_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/dshll"
	"github.com/sketchd/sketchd/internal/sketch"
)

// ownershipCases returns, for every registered kind, parameters and id
// counts that take its sketches through each representation the kind
// has (ds_hll in every target type, small enough to reach HLL mode with
// few ids), each as an encoding of a sketch built by adding the ids.
func ownershipCases(tb testing.TB) []ownershipCase {
	tb.Helper()
	params := []sketch.Params{}
	for _, k := range sketch.Kinds() {
		params = append(params, k.Default())
	}
	for _, t := range []dshll.Type{dshll.HLL4, dshll.HLL6, dshll.HLL8} {
		params = append(params, sketch.DSHLLParams{Params: dshll.Params{LgK: 4, Type: t}})
		params = append(params, sketch.DSHLLParams{Params: dshll.Params{LgK: 10, Type: t}})
	}
	var cases []ownershipCase
	for _, p := range params {
		for _, n := range []int{1, 40, 3000, 30000} {
			s, err := p.New()
			if err != nil {
				tb.Fatal(err)
			}
			ids := make([]cms.ID, n)
			for i := range ids {
				ids[i] = cms.IntID(int64(i)*7919 + 13)
			}
			b, err := p.Kind().Prepare(sketch.IDs(ids))
			if err != nil {
				tb.Fatal(err)
			}
			if _, err := s.Apply(b, nil); err != nil {
				tb.Fatalf("%s: apply %d ids: %v", p, n, err)
			}
			cases = append(cases, ownershipCase{
				name: fmt.Sprintf("%s/%s/%d", p, s.Representation(), n),
				kind: p.Kind(),
				enc:  s.AppendBinary(nil),
			})
		}
	}
	return cases
}

type ownershipCase struct {
	name string
	kind *sketch.Kind
	enc  []byte
}

// poison overwrites b as a reused request buffer would be.
func poison(b []byte) {
	for i := range b {
		b[i] = 0xdb
	}
}

// TestDecodeOwnsItsBytes: a decoded sketch shares no memory with the
// bytes it was decoded from. Overwriting the input after Decode (a
// request buffer reused by a later request) changes neither the
// sketch's encoding nor its estimate, and writing to the sketch changes
// nothing in the input. A decoder that keeps a slice of its input (a
// library that reads registers in place) fails here.
func TestDecodeOwnsItsBytes(t *testing.T) {
	for _, c := range ownershipCases(t) {
		in := bytes.Clone(c.enc)
		s, err := c.kind.Decode(in)
		if err != nil {
			t.Fatalf("%s: decode: %v", c.name, err)
		}
		est := s.Estimate()
		poison(in)
		if got := s.AppendBinary(nil); !bytes.Equal(got, c.enc) {
			t.Errorf("%s: overwriting the decoded bytes changed the sketch's encoding (%d bytes, %x… want %x…)",
				c.name, len(got), clip(got), clip(c.enc))
		}
		if got := s.Estimate(); got != est && !(got != got && est != est) {
			t.Errorf("%s: overwriting the decoded bytes changed the estimate from %v to %v", c.name, est, got)
		}

		// Writes to the sketch stay out of the input.
		in = bytes.Clone(c.enc)
		s, err = c.kind.Decode(in)
		if err != nil {
			t.Fatal(err)
		}
		addMany(t, s)
		if !bytes.Equal(in, c.enc) {
			t.Errorf("%s: adding to a decoded sketch wrote into the bytes it was decoded from", c.name)
		}
	}
}

// TestMergeOwnsItsOperand: merging a decoded sketch into another keeps
// nothing of the operand's bytes, and neither does the union of decoded
// sketches.
func TestMergeOwnsItsOperand(t *testing.T) {
	for _, c := range ownershipCases(t) {
		in := bytes.Clone(c.enc)
		o, err := c.kind.Decode(in)
		if err != nil {
			t.Fatal(err)
		}
		into, err := o.Params().New()
		if err != nil {
			t.Fatal(err)
		}
		if err := into.Merge(o); err != nil {
			t.Fatalf("%s: merge: %v", c.name, err)
		}
		u, err := c.kind.Union([]sketch.Sketch{o})
		if err != nil {
			t.Fatalf("%s: union: %v", c.name, err)
		}
		wantInto, wantU := into.AppendBinary(nil), u.AppendBinary(nil)
		poison(in)
		if got := into.AppendBinary(nil); !bytes.Equal(got, wantInto) {
			t.Errorf("%s: overwriting a merged operand's bytes changed the sketch it was merged into", c.name)
		}
		if got := u.AppendBinary(nil); !bytes.Equal(got, wantU) {
			t.Errorf("%s: overwriting an operand's bytes changed the union", c.name)
		}
	}
}

// TestApplyDeltaOwnsItsBytes: replaying a log delta keeps nothing of the
// delta's buffer (the log reader reuses it for the next record).
func TestApplyDeltaOwnsItsBytes(t *testing.T) {
	for _, c := range ownershipCases(t) {
		base, err := c.kind.Decode(bytes.Clone(c.enc))
		if err != nil {
			t.Fatal(err)
		}
		applied := base.Clone()
		delta := addMany(t, applied)
		want := applied.AppendBinary(nil)
		replayed := base.Clone()
		buf := bytes.Clone(delta)
		if err := replayed.ApplyDelta(buf); err != nil {
			t.Fatalf("%s: replay: %v", c.name, err)
		}
		poison(buf)
		if got := replayed.AppendBinary(nil); !bytes.Equal(got, want) {
			t.Errorf("%s: overwriting a replayed delta's buffer changed the sketch", c.name)
		}
	}
}

// TestCloneOwnsItsState: a clone and its original change independently,
// also for a sketch decoded from bytes that are kept as uploaded.
func TestCloneOwnsItsState(t *testing.T) {
	for _, c := range ownershipCases(t) {
		s, err := c.kind.Decode(bytes.Clone(c.enc))
		if err != nil {
			t.Fatal(err)
		}
		cl := s.Clone()
		addMany(t, cl)
		if got := s.AppendBinary(nil); !bytes.Equal(got, c.enc) {
			t.Errorf("%s: adding to a clone changed the original", c.name)
		}
	}
}

// addMany adds ids none of the cases hold, enough to change every
// register of a small sketch, and returns the log delta.
func addMany(tb testing.TB, s sketch.Sketch) []byte {
	tb.Helper()
	ids := make([]cms.ID, 5000)
	for i := range ids {
		ids[i] = cms.IntID(-int64(i) - 1)
	}
	b, err := s.Kind().Prepare(sketch.IDs(ids))
	if err != nil {
		tb.Fatal(err)
	}
	delta, err := s.Apply(b, nil)
	if err != nil {
		tb.Fatalf("%s: apply: %v", s.Params(), err)
	}
	return delta
}

func clip(b []byte) []byte { return b[:min(len(b), 24)] }
