package sketch

import (
	"bytes"
	"testing"

	"github.com/sketchd/sketchd/internal/airlift"
	"github.com/sketchd/sketchd/internal/cms"
)

// TestAirliftHashesAsTrino: the kind takes ids hashed as approx_set
// hashes a BIGINT and a VARCHAR (airlift's hashes, which its Java tests
// check against airlift's library).
func TestAirliftHashesAsTrino(t *testing.T) {
	ids := []cms.ID{cms.IntID(0), cms.IntID(-1), cms.IntID(1 << 62), cms.TextID(""), cms.TextID("user-1"), cms.TextID("日本語")}
	b, err := airliftKind.Prepare(IDs(ids))
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		want := airlift.HashInt(id.Int())
		if id.IsText() {
			want = airlift.HashString(id.Text())
		}
		if got := b.(hashBatch)[i]; got != want {
			t.Errorf("id %v hashes to %#x, airlift's %#x", id, got, want)
		}
	}
}

// TestAirliftDeltaReplays: Apply's delta, replayed onto the state Apply
// started from, gives the same bytes through the switch to dense;
// malformed deltas are refused and change nothing.
func TestAirliftDeltaReplays(t *testing.T) {
	s, _ := AirliftParams{airlift.Params{IndexBits: 10}}.New()
	for _, n := range []int{3, 0, 150, 2000} {
		ids := make([]cms.ID, n)
		for i := range ids {
			ids[i] = cms.IntID(int64(i * 7))
		}
		b, _ := airliftKind.Prepare(IDs(ids))
		before := s.Clone()
		delta, err := s.Apply(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			if len(delta) != 0 {
				t.Errorf("an empty batch logged %x", delta)
			}
			continue
		}
		if err := before.ApplyDelta(delta); err != nil {
			t.Fatal(err)
		}
		if got, want := before.AppendBinary(nil), s.AppendBinary(nil); !bytes.Equal(got, want) {
			t.Errorf("%d ids: replayed %.40x, applied %.40x", n, got, want)
		}
		for _, bad := range [][]byte{delta[:len(delta)-1], append(bytes.Clone(delta), 0), {0}, {}} {
			c := s.Clone()
			if err := c.ApplyDelta(bad); err == nil || !bytes.Equal(c.AppendBinary(nil), s.AppendBinary(nil)) {
				t.Errorf("ApplyDelta(%.24x) = %v or changed the sketch", bad, err)
			}
		}
	}
	if s.Representation() != "DENSE" {
		t.Errorf("representation %s after 2,153 ids at 10 index bits", s.Representation())
	}
}
