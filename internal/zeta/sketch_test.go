package zeta

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestChunkedAddsEqualOneBatch: values added in batches, each compacted
// (as sketchd stores a sketch after every write), give the bytes of the
// same values added at once, through the switch to normal.
func TestChunkedAddsEqualOneBatch(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 3))
	for _, n := range []int{0, 1, 100, 1000, 5000, 40000} {
		one := build(t, ParamsFor(12), TypeLong, n)
		chunked := build(t, ParamsFor(12), TypeLong, 0)
		for v := 0; v < n; {
			k := min(n-v, 1+rng.IntN(900))
			for range k {
				chunked.AddHash(HashInt(int64(v)))
				v++
			}
			chunked.Compact()
		}
		if a, b := one.AppendBinary(nil), chunked.AppendBinary(nil); !bytes.Equal(a, b) {
			t.Errorf("seed %d, %d values: chunked bytes %.40x differ from %.40x", seed, n, b, a)
		}
	}
}

// TestMergeRules: what Merge and Union refuse, and that a refused merge
// changes nothing.
func TestMergeRules(t *testing.T) {
	longs := build(t, ParamsFor(14), TypeLong, 100)
	strs, _ := New(ParamsFor(14))
	strs.AddString("x")
	lower := build(t, ParamsFor(12), TypeLong, 100)
	before := longs.AppendBinary(nil)
	for _, c := range []struct {
		name string
		o    *Sketch
		want error
	}{{"strings into longs", strs, ErrValueType}, {"lower precision", lower, ErrFewerRegisters}} {
		if err := longs.Merge(c.o); !errors.Is(err, c.want) {
			t.Errorf("%s: Merge = %v, want %v", c.name, err, c.want)
		}
		if !bytes.Equal(longs.AppendBinary(nil), before) {
			t.Errorf("%s: a refused merge changed the sketch", c.name)
		}
	}
	if _, err := Union(longs, strs); !errors.Is(err, ErrValueType) {
		t.Errorf("Union(longs, strings) = %v", err)
	}
	// Sparse (14, 25) and sparse (15, 20): neither is below the other.
	a := build(t, Params{14, 25}, TypeLong, 10)
	b := build(t, Params{15, 20}, TypeLong, 10)
	if _, err := Union(a, b); !errors.Is(err, ErrPrecision) {
		t.Errorf("Union(14/25, 15/20) = %v", err)
	}
	if err := longs.AddString("s"); !errors.Is(err, ErrValueType) {
		t.Errorf("AddString into longs = %v", err)
	}
	u, err := Union(longs, lower)
	if err != nil || u.Params() != ParamsFor(12) || u.NumValues() != 200 {
		t.Errorf("Union(14, 12) = %v %+v, %v", u.Params(), u.NumValues(), err)
	}
	// An unknown type agrees with any; the receiver keeps its own.
	unknown, _ := New(ParamsFor(14))
	if u, err := Union(unknown, longs); err != nil || u.ValueType() != TypeUnknown || u.Estimate() != longs.Estimate() {
		t.Errorf("Union(unknown, longs) = %v, %v", u, err)
	}
	if err := unknown.Merge(strs); err != nil || unknown.ValueType() != TypeUnknown {
		t.Errorf("Merge(strings) into unknown = %v, type %v", err, unknown.ValueType())
	}
}

// TestUnionProperties: commutative and idempotent in registers (the
// estimate), associative, counting every value of its inputs.
func TestUnionProperties(t *testing.T) {
	a := build(t, ParamsFor(13), TypeLong, 3000)
	b, _ := New(ParamsFor(13))
	for v := 2000; v < 9000; v++ {
		b.AddInt(int64(v))
	}
	c := build(t, ParamsFor(13), TypeLong, 20)
	ab, _ := Union(a, b)
	ba, _ := Union(b, a)
	aa, _ := Union(a, a)
	abc1, _ := Union(ab, c)
	bc, _ := Union(b, c)
	abc2, _ := Union(a, bc)
	if !bytes.Equal(ab.AppendBinary(nil), ba.AppendBinary(nil)) {
		t.Error("Union(a, b) and Union(b, a) differ")
	}
	if aa.Estimate() != a.Estimate() || aa.NumValues() != 2*a.NumValues() {
		t.Errorf("Union(a, a): estimate %d values %d, a has %d %d", aa.Estimate(), aa.NumValues(), a.Estimate(), a.NumValues())
	}
	if !bytes.Equal(abc1.AppendBinary(nil), abc2.AppendBinary(nil)) {
		t.Error("(a ∪ b) ∪ c and a ∪ (b ∪ c) differ")
	}
}
