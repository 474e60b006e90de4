package kll

import (
	"bytes"
	"errors"
	"testing"
)

func sentinels(err error) int {
	n := 0
	for _, s := range []error{ErrParams, ErrTooShort, ErrVersion, ErrCorrupt, ErrEmpty} {
		if errors.Is(err, s) {
			n++
		}
	}
	return n
}

// FuzzDecode: no input panics; an error wraps exactly one sentinel; a
// decoded sketch encodes back to the input (flag 8 dropped), answers
// queries, takes an update and a merge with itself, and still encodes to
// decodable bytes; Declared never contradicts what decodes.
func FuzzDecode(f *testing.F) {
	for _, b := range validEncodings(f) {
		f.Add(b)
	}
	for _, c := range malformed() {
		f.Add(c.b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzType[float64](t, b)
		fuzzType[int64](t, b)
	})
}

func fuzzType[T Item](t *testing.T, b []byte) {
	s, err := Decode[T](b)
	if d, ok := Declared(b); ok && d != ItemTypeOf[T]() && err == nil {
		t.Fatalf("bytes declaring %ss decode as %ss", d, ItemTypeOf[T]())
	}
	if err != nil {
		if sentinels(err) != 1 {
			t.Fatalf("error %q wraps %d sentinels", err, sentinels(err))
		}
		return
	}
	// The encoding is the input, but for flag 8 (Java 3.2 to 4.0's mark
	// of a sketch of doubles), which is read and not written.
	want := bytes.Clone(b)
	want[3] &^= flagDoubles
	if !bytes.Equal(s.AppendBinary(nil), want) {
		t.Fatal("decode then encode differs")
	}
	v := s.View()
	for _, r := range []float64{0, 0.3, 1} {
		if q, err := v.Quantile(r, true); err == nil && (q < s.Min() || q > s.Max()) {
			t.Fatalf("quantile %v = %v outside [%v, %v]", r, q, s.Min(), s.Max())
		}
	}
	if r, err := v.Rank(s.Max(), true); err == nil && r != 1 {
		t.Fatalf("rank of the max = %v", r)
	}
	c := s.Clone()
	s.Update(s.Min())
	s.Merge(c)
	if s.N() != 2*c.N()+1 {
		t.Fatalf("n %d after an update and a merge of %d", s.N(), c.N())
	}
	if _, err := Decode[T](s.AppendBinary(nil)); err != nil {
		t.Fatalf("after an update and a merge: %v", err)
	}
}
