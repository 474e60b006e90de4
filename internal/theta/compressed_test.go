package theta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// packed builds version 4 bytes by hand: the preamble, the count in nb
// bytes, and the deltas of hs (ascending) bits wide, most significant bit
// first.
func packed(pre byte, bits, nb int, flags byte, theta uint64, hs ...uint64) []byte {
	b := []byte{pre, 4, 3, byte(bits), byte(nb), flags}
	b = binary.LittleEndian.AppendUint16(b, SeedHash())
	if pre == 2 {
		b = binary.LittleEndian.AppendUint64(b, theta)
	}
	for i := range nb {
		b = append(b, byte(len(hs)>>(8*i)))
	}
	var bitsOut []byte
	prev := uint64(0)
	for _, h := range hs {
		d := h - prev
		prev = h
		for i := bits - 1; i >= 0; i-- {
			bitsOut = append(bitsOut, byte(d>>uint(i)&1))
		}
	}
	for len(bitsOut)%8 != 0 {
		bitsOut = append(bitsOut, 0)
	}
	for i := 0; i < len(bitsOut); i += 8 {
		var v byte
		for _, x := range bitsOut[i : i+8] {
			v = v<<1 | x
		}
		b = append(b, v)
	}
	return b
}

// updateTable builds the bytes of Java's update sketch: preamble then a
// table of 2^lgArr slots holding hs at the slots Slot picks.
func updateTable(lgNom, lgArr int, flags byte, count uint32, p float32, theta uint64, hs ...uint64) []byte {
	b := []byte{0xc3, 3, 2, byte(lgNom), byte(lgArr), flags}
	b = binary.LittleEndian.AppendUint16(b, SeedHash())
	b = binary.LittleEndian.AppendUint32(b, count)
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(p))
	b = binary.LittleEndian.AppendUint64(b, theta)
	table := make([]uint64, 1<<lgArr)
	for _, h := range hs {
		i, _ := Slot(table, uint8(lgArr), h)
		table[i] = h
	}
	for _, h := range table {
		b = binary.LittleEndian.AppendUint64(b, h)
	}
	return b
}

func malformedCompressed() []malformedCase {
	h1, h2 := HashInt(1), HashInt(2)
	lo, hi := min(h1, h2), max(h1, h2)
	good := packed(1, 63, 1, fOrdered, 0, lo, hi)
	with := func(b []byte, i int, v byte) []byte {
		c := bytes.Clone(b)
		c[i] = v
		return c
	}
	upd := updateTable(5, 5, flagReadOnly, 2, 1, MaxTheta, lo, hi)
	return []malformedCase{
		{"compressed: preamble 3", with(good, 0, 3), ErrCorrupt},
		{"compressed: family 2", with(good, 2, 2), ErrCorrupt},
		{"compressed: not ordered", with(good, 5, flagCompact|flagReadOnly), ErrCorrupt},
		{"compressed: empty flag", with(good, 5, fEmpty), ErrCorrupt},
		{"compressed: entry bits 0", with(good, 3, 0), ErrCorrupt},
		{"compressed: entry bits 64", with(good, 3, 64), ErrCorrupt},
		{"compressed: count bytes 0", with(good, 4, 0), ErrCorrupt},
		{"compressed: count bytes 5", with(good, 4, 5), ErrCorrupt},
		{"compressed: another seed", with(good, 6, 0), ErrParams},
		{"compressed: cut in the count", good[:8], ErrTooShort},
		{"compressed: cut in the data", good[:len(good)-1], ErrTooShort},
		{"compressed: trailing byte", append(bytes.Clone(good), 0), ErrCorrupt},
		{"compressed: no entries", packed(1, 8, 1, fOrdered, 0), ErrCorrupt},
		{"compressed: count 2^32-1", append(packed(1, 63, 4, fOrdered, 0)[:8], 0xff, 0xff, 0xff, 0xff), ErrTooShort},
		{"compressed: padding bits set", func() []byte { b := packed(1, 63, 1, fOrdered, 0, lo, hi); b[len(b)-1] |= 1; return b }(), ErrCorrupt},
		{"compressed: repeated hash", packed(1, 63, 1, fOrdered, 0, lo, lo), ErrCorrupt},
		{"compressed: hash at theta", packed(2, 63, 1, fOrdered, hi, lo, hi), ErrCorrupt},
		{"compressed: theta zero", packed(2, 63, 1, fOrdered, 0, lo), ErrCorrupt},
		{"compressed: more than lg_k 4 keeps", func() []byte {
			hs := make([]uint64, 31)
			for i := range hs {
				hs[i] = uint64(i + 1)
			}
			return packed(1, 5, 1, fOrdered, 0, hs...)
		}(), ErrParams},
		{"update: preamble 2", with(upd, 0, 0xc2), ErrCorrupt},
		{"update: compact flag", with(upd, 5, flagCompact), ErrCorrupt},
		{"update: big-endian flag", with(upd, 5, flagBigEndian), ErrCorrupt},
		{"update: lg_nom 3", with(upd, 3, 3), ErrParams},
		{"update: lg_nom 27", with(upd, 3, 27), ErrParams},
		{"update: lg_arr above lg_nom+1", with(upd, 4, 7), ErrCorrupt},
		{"update: another seed", with(upd, 6, 0), ErrParams},
		{"update: cut preamble", upd[:20], ErrTooShort},
		{"update: cut table", upd[:len(upd)-8], ErrTooShort},
		{"update: claims 2^26 slots", with(upd, 4, 26), ErrCorrupt},
		{"update: trailing bytes", append(bytes.Clone(upd), 0, 0, 0, 0, 0, 0, 0, 0), ErrCorrupt},
		{"update: count above the filled slots", updateTable(5, 5, 0, 3, 1, MaxTheta, lo, hi), ErrCorrupt},
		{"update: count below the filled slots", updateTable(5, 5, 0, 1, 1, MaxTheta, lo, hi), ErrCorrupt},
		{"update: p 0", updateTable(5, 5, 0, 2, 0, MaxTheta, lo, hi), ErrCorrupt},
		{"update: p 1.5", updateTable(5, 5, 0, 2, 1.5, MaxTheta, lo, hi), ErrCorrupt},
		{"update: p NaN", updateTable(5, 5, 0, 2, float32(math.NaN()), MaxTheta, lo, hi), ErrCorrupt},
		{"update: theta 0", updateTable(5, 5, 0, 2, 1, 0, lo, hi), ErrCorrupt},
		{"update: empty flag with hashes", updateTable(5, 5, flagEmpty, 2, 1, MaxTheta, lo, hi), ErrCorrupt},
		{"update: count past lg_k 4 keeps", func() []byte {
			hs := make([]uint64, 31)
			for i := range hs {
				hs[i] = uint64(i+1) << 20
			}
			return updateTable(4, 5, 0, 31, 1, MaxTheta, hs...)
		}(), ErrParams},
	}
}

// TestCompressedRoundTrip: AppendCompressed writes version 4 exactly when
// the libraries do (an ordered sketch estimating or with two or more
// hashes), a hand-packed encoding of the same hashes, and Decode reads it
// back as the same sketch.
func TestCompressedRoundTrip(t *testing.T) {
	for _, lgK := range []int{MinLgK, 5, 12} {
		for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 16, 17, 100, 5000, 200000} {
			s := buildRange(t, lgK, 0, n)
			c := s.AppendCompressed(nil)
			v4 := !s.IsEmpty() && (s.Retained() >= 2 || s.IsEstimationMode())
			if got := c[1] == 4; got != v4 {
				t.Errorf("lg_k %d n %d: version 4 = %t, want %t", lgK, n, got, v4)
			}
			if !v4 {
				if !bytes.Equal(c, encode(t, s)) {
					t.Errorf("lg_k %d n %d: uncompressible sketch written as %x, not its version 3 bytes", lgK, n, c)
				}
				continue
			}
			if len(c) != s.CompressedSizeBytes() {
				t.Errorf("lg_k %d n %d: CompressedSizeBytes %d, encoding %d", lgK, n, s.CompressedSizeBytes(), len(c))
			}
			hs := s.Hashes(nil)
			pre := byte(1)
			if s.IsEstimationMode() {
				pre = 2
			}
			if want := packed(pre, int(c[3]), int(c[4]), fOrdered, s.Theta64(), hs...); !bytes.Equal(c, want) {
				t.Fatalf("lg_k %d n %d: AppendCompressed\n got %x\nwant %x", lgK, n, c, want)
			}
			// The entry width is the widest delta's; the count takes the
			// fewest bytes.
			var ored, prev uint64
			for _, h := range hs {
				ored |= h - prev
				prev = h
			}
			if int(c[3]) != 64-countLeadingZeros(ored) || int(c[4]) != (bitLen(uint64(len(hs)))+7)/8 {
				t.Errorf("lg_k %d n %d: entry bits %d, count bytes %d", lgK, n, c[3], c[4])
			}
			d, err := Decode(c)
			if err != nil {
				t.Fatalf("lg_k %d n %d: Decode(compressed) = %v", lgK, n, err)
			}
			if !bytes.Equal(encode(t, d), encode(t, s)) || d.Params().MaxRetained() < s.Retained() {
				t.Errorf("lg_k %d n %d: compressed bytes decoded as %v, want %v", lgK, n, d, s)
			}
			if !Sniff(c) {
				t.Errorf("lg_k %d n %d: Sniff refused compressed bytes", lgK, n)
			}
		}
	}
}

func countLeadingZeros(v uint64) int {
	n := 0
	for i := 63; i >= 0 && v>>uint(i)&1 == 0; i-- {
		n++
	}
	return n
}

func bitLen(v uint64) int { return 64 - countLeadingZeros(v) }

// TestDecodeUpdateSketch: Java's update-sketch bytes (the hash table)
// decode as the compact sketch of the hashes below theta, lg_k taken from
// lg_nom; an empty one as the empty sketch.
func TestDecodeUpdateSketch(t *testing.T) {
	s := buildRange(t, 5, 0, 1000) // estimating: theta below 1
	hs := s.Hashes(nil)
	above := s.Theta64() + 1 // in the table, not below theta: dropped as compact() drops it
	b := updateTable(5, 6, 0, uint32(len(hs)+1), 1, s.Theta64(), append(hs, above)...)
	d, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(update sketch) = %v", err)
	}
	if d.Params().LgK != 5 || !bytes.Equal(encode(t, d), encode(t, s)) {
		t.Errorf("update sketch decoded as %v, want %v", d, s)
	}
	empty, err := Decode(updateTable(12, 5, flagEmpty, 0, 1, MaxTheta))
	if err != nil || !empty.IsEmpty() || empty.Params().LgK != 12 {
		t.Errorf("Decode(empty update sketch) = %v, %v", empty, err)
	}
	// Sampling (p < 1) with nothing sampled: not empty, estimate 0.
	sampled, err := Decode(updateTable(12, 5, 0, 0, 0.5, MaxTheta/2))
	if err != nil || sampled.IsEmpty() || sampled.Estimate() != 0 || sampled.Theta() > 0.51 {
		t.Errorf("Decode(sampled update sketch) = %v, %v", sampled, err)
	}
	if !Sniff(b) {
		t.Error("Sniff refused an update sketch")
	}
}

// TestCompressedErrorsName: each malformed compressed or update encoding
// fails with a message naming where.
func TestCompressedErrorsName(t *testing.T) {
	for _, tt := range malformedCompressed() {
		_, err := DecodeParams(tt.in, Params{LgK: 4})
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}
