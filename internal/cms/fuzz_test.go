package cms

import (
	"bytes"
	"testing"
)

// FuzzDecode: no input panics; an error wraps exactly one sentinel and
// leaves the receiver unchanged; an accepted input re-encodes to itself,
// and stays decodable after an addition and a union.
func FuzzDecode(f *testing.F) {
	for _, b := range validEncodings(f) {
		f.Add(b)
	}
	for _, tc := range malformed() {
		f.Add(tc.b)
	}
	for _, tc := range rangedMalformed() {
		f.Add(tc.b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := Decode(validNarrow)
		if err != nil {
			t.Fatal(err)
		}
		err = u.UnmarshalBinary(b)
		if err != nil {
			if n := sentinels(err); n != 1 {
				t.Fatalf("error %q wraps %d sentinels, want 1", err, n)
			}
			if !bytes.Equal(mustEncode(t, u), validNarrow) {
				t.Fatal("receiver changed by a failed UnmarshalBinary")
			}
			return
		}
		s := roundTrip(t, b)
		if !bytes.Equal(mustEncode(t, u), b) {
			t.Fatal("UnmarshalBinary then encode differs from the input")
		}
		for _, it := range s.Top(0) {
			if it.Count < 1 || it.Count > s.Total() {
				t.Fatalf("Top item %v count %d outside 1..%d", it.ID, it.Count, s.Total())
			}
		}
		if s.DomainBits() > 0 {
			// Ranges never undercount what the domain's ends say: the
			// whole domain is N.
			all, err := s.Range(0, uint64(1)<<s.DomainBits()-1)
			if err != nil || all.Estimate != s.Total() {
				t.Fatalf("whole domain = %+v, %v; want %d", all, err, s.Total())
			}
			if _, _, err := s.Quantile(0.5); err != nil {
				t.Fatal(err)
			}
		}
		if s.CheckAdd(3) == nil {
			v := int64(len(b))
			if s.DomainBits() > 0 {
				v &= int64(1)<<s.DomainBits() - 1
			}
			if err := s.AddInt(v, 2); err != nil {
				t.Fatal(err)
			}
			if err := s.AddText(b[:min(len(b), 3)], 1); err != nil && sentinels(err) != 1 {
				t.Fatal(err)
			}
			roundTrip(t, mustEncode(t, s))
		}
		if s.CheckAdd(s.Total()) == nil {
			if err := s.Union(s.Clone()); err != nil {
				t.Fatal(err)
			}
			roundTrip(t, mustEncode(t, s))
		}
	})
}
