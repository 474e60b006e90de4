package theta

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// The update (QuickSelect) theta sketch as DataSketches' Java library
// serializes it (UpdateSketch.toByteArray; family 2, serial version 3,
// little-endian): the sketch's own hash table, which sketchd reads as the
// compact sketch of the same contents, as the library's compact() does.
//
//	byte 0     preamble longs, 3, in the low 6 bits; the resize factor in
//	           the top 2 (ignored)
//	byte 1     serial version, 3
//	byte 2     family, 2 (QuickSelect update sketch)
//	byte 3     lg_nom: lg_k
//	byte 4     lg_arr: log2 of the table's slots, at most lg_k + 1
//	byte 5     flags: 2 read-only, 4 empty; never compact or big-endian
//	bytes 6-7  seed hash
//	bytes 8-11 number of hashes in the table
//	bytes 12-15 p, the sampling probability (a float32 in (0, 1])
//	bytes 16-23 theta
//	then 2^lg_arr slots of 8 bytes, 0 for a free slot
const (
	familyUpdate    = 2
	updatePreLongs  = 3
	maxUpdateLgArr  = MaxLgK + 1
	updatePreamble  = 24
	flagsUpdateKeep = flagReadOnly | flagEmpty
)

// updateLgNom returns lg_nom of update-sketch bytes, or false.
func updateLgNom(b []byte) (int, bool) {
	if len(b) < 8 || b[2] != familyUpdate {
		return 0, false
	}
	return int(b[3]), true
}

// decodeUpdate decodes an update sketch (see the layout above) into a
// compact sketch with parameters p, keeping the hashes below theta as
// compact() does. Errors: fewer bytes than the preamble or the table:
// ErrTooShort; another seed's hash, lg_nom outside [MinLgK, MaxLgK], or
// more hashes than p keeps: ErrParams; preamble longs other than 3, lg_arr
// above lg_nom + 1, compact, big-endian or unknown flags, p outside (0, 1],
// theta outside (0, 2^63-1], a length other than the table's, a count that
// is not the table's filled slots, an empty flag over a filled table, or a
// repeated hash: ErrCorrupt. The length is checked before anything is
// allocated.
func decodeUpdate(b []byte, p Params) (*Sketch, error) {
	pre, lgNom, lgArr, flags := int(b[0]&0x3f), int(b[3]), int(b[4]), b[5]
	switch {
	case pre != updatePreLongs:
		return nil, fmt.Errorf("theta: %d preamble longs at byte 0 of an update sketch, want 3: %w", pre, ErrCorrupt)
	case flags&^flagsUpdateKeep != 0:
		return nil, fmt.Errorf("theta: flags %#02x at byte 5 of an update sketch: %w", flags, ErrCorrupt)
	case lgNom < MinLgK || lgNom > MaxLgK:
		return nil, fmt.Errorf("theta: lg_nom %d at byte 3 not in [%d, %d]: %w", lgNom, MinLgK, MaxLgK, ErrParams)
	case lgArr > lgNom+1:
		return nil, fmt.Errorf("theta: lg_arr %d at byte 4 above lg_nom %d + 1: %w", lgArr, lgNom, ErrCorrupt)
	}
	if sh := binary.LittleEndian.Uint16(b[6:]); sh != SeedHash() {
		return nil, fmt.Errorf("theta: seed hash %#04x at byte 6, want %#04x (seed %d): %w", sh, SeedHash(), Seed, ErrParams)
	}
	if len(b) < updatePreamble {
		return nil, fmt.Errorf("theta: update preamble needs %d bytes, have %d: %w", updatePreamble, len(b), ErrTooShort)
	}
	want := updatePreamble + 8<<lgArr
	switch {
	case len(b) < want:
		return nil, fmt.Errorf("theta: a table of 2^%d slots needs %d bytes, have %d: %w", lgArr, want, len(b), ErrTooShort)
	case len(b) > want:
		return nil, fmt.Errorf("theta: %d trailing bytes at byte %d: %w", len(b)-want, want, ErrCorrupt)
	}
	count := int(binary.LittleEndian.Uint32(b[8:]))
	prob := math.Float32frombits(binary.LittleEndian.Uint32(b[12:]))
	th := binary.LittleEndian.Uint64(b[16:])
	switch {
	case !(prob > 0 && prob <= 1):
		return nil, fmt.Errorf("theta: sampling probability %v at byte 12 not in (0, 1]: %w", prob, ErrCorrupt)
	case th == 0 || th > MaxTheta:
		return nil, fmt.Errorf("theta: theta %#x at byte 16 not in (0, 2^63-1]: %w", th, ErrCorrupt)
	case count > 1<<lgArr:
		return nil, fmt.Errorf("theta: %d hashes at byte 8 in a table of %d slots: %w", count, 1<<lgArr, ErrCorrupt)
	case count > p.MaxRetained():
		return nil, fmt.Errorf("theta: %d hashes, more than lg_k %d keeps (%d): %w", count, p.LgK, p.MaxRetained(), ErrParams)
	case flags&flagEmpty != 0 && count != 0:
		return nil, fmt.Errorf("theta: empty flag with %d hashes: %w", count, ErrCorrupt)
	}
	s := &Sketch{lgK: uint8(p.LgK), theta: th}
	if flags&flagEmpty != 0 {
		s.empty, s.theta, s.sorted = true, MaxTheta, []uint64{}
		return s, nil
	}
	e := make([]uint64, 0, count)
	filled := 0
	for i := range 1 << lgArr {
		h := binary.LittleEndian.Uint64(b[updatePreamble+8*i:])
		if h == 0 {
			continue
		}
		filled++
		if filled > count {
			return nil, fmt.Errorf("theta: more filled slots than the %d hashes at byte 8: %w", count, ErrCorrupt)
		}
		if h < th {
			e = append(e, h)
		}
	}
	if filled != count {
		return nil, fmt.Errorf("theta: %d filled slots, not the %d hashes at byte 8: %w", filled, count, ErrCorrupt)
	}
	slices.Sort(e)
	for i := 1; i < len(e); i++ {
		if e[i] == e[i-1] {
			return nil, fmt.Errorf("theta: hash %#x repeated: %w", e[i], ErrCorrupt)
		}
	}
	s.sorted = e
	return s, nil
}
