package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/idem"
)

// validOps is a payload body with one operation of each type, and the
// two legacy adds.
func validOps(tb testing.TB) []byte {
	tb.Helper()
	st, err := newState(hllSpec(6), time.Unix(1, 0))
	if err != nil {
		tb.Fatal(err)
	}
	var body []byte
	body = appendPut(body, "p", st)
	body = appendDelete(body, "d")
	body = appendAdd(body, "a", tagHLL, time.Unix(3, 0), binary.AppendUvarint(nil, 0))
	body = appendMetric(body, "m", true)
	// Legacy: opAddHashes with two hashes, opAddItems with none.
	body = appendName(body, opAddHashes, "h")
	body = binary.BigEndian.AppendUint64(body, 3)
	body = append(body, 2)
	body = binary.BigEndian.AppendUint64(body, 1)
	body = binary.BigEndian.AppendUint64(body, math.MaxUint64)
	body = appendName(body, opAddItems, "c")
	body = binary.BigEndian.AppendUint64(body, 4)
	body = append(body, 0)
	body = appendKey(body, idem.ID{Scope: "s", Target: "t", Key: "k"}, idem.Record{Fingerprint: [32]byte{1, 2}, Answer: []byte("answer"), Created: time.Unix(5, 0)})
	return append(binary.AppendUvarint(nil, 7), body...)
}

// frame wraps a payload body in a record with lsn.
func frame(lsn uint64, body []byte) []byte {
	payload := binary.BigEndian.AppendUint64(nil, lsn)
	payload = append(payload, body...)
	b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(payload, crcTable))
	return append(b, payload...)
}

// malformedOps are payload bodies decodeOps must refuse.
var malformedOps = [][]byte{
	{},
	{0x80},                         // count cut short
	{1},                            // one operation, no bytes
	{0xff, 0xff, 0xff, 0xff, 0x0f}, // a huge count
	{1, byte(opDelete), 5, 'a'},    // name cut short
	{1, 9, 1, 'a'},                 // unknown type
	{1, byte(opAddHashes), 1, 'h', 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x03},      // hash count past the end
	{1, byte(opAddItems), 1, 'c', 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x0f}, // item count past the end
	{1, byte(opAddItems), 1, 'c', 0, 0, 0, 0, 0, 0, 0, 0, 1, 7, 0},                // unknown id kind
	{1, byte(opPut), 1, 'p', 0xff, 0x01},                                          // record length past the end
	{1, byte(opDelete), 1, 'a', 0},                                                // trailing byte
	{1, byte(opKey), 3, 0, 0, 'k', 0, 0, 0, 0, 0, 0, 0, 5},                        // key's fingerprint cut short
	{1, byte(opKey), 2, 0, 0},                                                     // an empty key
	{1, byte(opKey), 3, 5, 0, 'k'},                                                // scope past the name
	{0, 0},
}

// encodeOp re-encodes a decoded operation (a legacy add as opAdd).
func encodeOp(b []byte, o *op) []byte {
	switch o.typ {
	case opPut:
		b = appendName(b, opPut, o.name)
		b = binary.AppendUvarint(b, uint64(len(o.rec)))
		return append(b, o.rec...)
	case opDelete:
		return appendDelete(b, o.name)
	case opAdd:
		return appendAdd(b, o.name, o.tag, o.updated, o.delta)
	case opKey:
		id, _ := decodeKeyID([]byte(o.name))
		return appendKey(b, id, o.key)
	}
	return appendMetric(b, o.name, o.metric)
}

// decodeOpsAllocBytes measures the heap decodeOps allocates for in (the
// least of a few runs, after a warm-up).
func decodeOpsAllocBytes(in []byte) uint64 {
	keep := func(o *op) error { runtime.KeepAlive(o); return nil }
	decodeOps(in, keep)
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		decodeOps(in, keep)
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// opsAllocBound is the sketch decoders' bound (see internal/hll).
func opsAllocBound(in []byte) uint64 { return 16*uint64(len(in)) + 4096 }

func TestDecodeOpsRefusesMalformed(t *testing.T) {
	for i, in := range malformedOps {
		if err := decodeOps(in, nil); err == nil {
			t.Errorf("case %d (%x): decodeOps accepted it", i, in)
		}
		if got := decodeOpsAllocBytes(in); got > opsAllocBound(in) {
			t.Errorf("case %d: decodeOps allocated %d bytes for %d", i, got, len(in))
		}
	}
	// Counts that claim far more than the bytes hold allocate nothing big:
	// 200 operations in 202 bytes, 200 items in 214.
	items := append([]byte{1, byte(opAddItems), 1, 'c', 0, 0, 0, 0, 0, 0, 0, 0, 0xc8, 0x01}, make([]byte, 200)...)
	for _, in := range [][]byte{
		append([]byte{0xc8, 0x01}, make([]byte, 200)...),
		items,
		append([]byte{1, byte(opAddHashes), 1, 'h', 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, make([]byte, 64)...),
		append([]byte{1, byte(opAddItems), 1, 'c', 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, make([]byte, 64)...),
	} {
		if got := decodeOpsAllocBytes(in); got > opsAllocBound(in) {
			t.Errorf("decodeOps(%x) allocated %d bytes", in, got)
		}
	}
}

func FuzzDecodeOps(f *testing.F) {
	f.Add(validOps(f))
	for _, in := range malformedOps {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if alloc := decodeOpsAllocBytes(in); alloc > opsAllocBound(in) {
			t.Fatalf("decodeOps(%d bytes) allocated %d bytes", len(in), alloc)
		}
		var ops []op
		err := decodeOps(in, func(o *op) error {
			c := *o
			c.rec, c.delta, c.key.Answer = bytes.Clone(o.rec), bytes.Clone(o.delta), bytes.Clone(o.key.Answer)
			ops = append(ops, c)
			return nil
		})
		if err != nil {
			return
		}
		// What decodes re-encodes to something that decodes the same.
		again := binary.AppendUvarint(nil, uint64(len(ops)))
		for i := range ops {
			again = encodeOp(again, &ops[i])
		}
		i := 0
		err = decodeOps(again, func(o *op) error {
			w := ops[i]
			if o.typ != w.typ || o.name != w.name || !bytes.Equal(o.rec, w.rec) || !o.updated.Equal(w.updated) ||
				o.tag != w.tag || !bytes.Equal(o.delta, w.delta) || o.metric != w.metric ||
				o.key.Fingerprint != w.key.Fingerprint || !o.key.Created.Equal(w.key.Created) || !bytes.Equal(o.key.Answer, w.key.Answer) {
				t.Fatalf("operation %d re-decodes as %+v, was %+v", i, *o, w)
			}
			i++
			return nil
		})
		if err != nil || i != len(ops) {
			t.Fatalf("re-encoded operations do not decode: %v (%d of %d)", err, i, len(ops))
		}
	})
}

func FuzzCheckRecord(f *testing.F) {
	rec := frame(7, validOps(f))
	f.Add(rec)
	f.Add(rec[:len(rec)-1])
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5})
	f.Fuzz(func(t *testing.T, in []byte) {
		payload, n, reason := checkRecord(in)
		if reason != "" {
			if payload != nil || n != 0 {
				t.Fatalf("refused (%s) but returned %d bytes", reason, n)
			}
			return
		}
		if n < walRecordHeader+8 || n > len(in) || len(payload) != n-walRecordHeader {
			t.Fatalf("accepted %d bytes of %d with a payload of %d", n, len(in), len(payload))
		}
		if !bytes.Equal(frame(binary.BigEndian.Uint64(payload), payload[8:]), in[:n]) {
			t.Fatal("an accepted record does not re-frame to its bytes")
		}
	})
}

// FuzzScanWAL reads arbitrary segment contents: no panic, and what it
// reports is consistent (records applied in LSN order, a torn tail or
// damage only where a record failed its check).
func FuzzScanWAL(f *testing.F) {
	good := append(frame(1, validOps(f)), frame(2, validOps(f))...)
	f.Add(good)
	f.Add(good[:len(good)-3])
	flipped := bytes.Clone(good)
	flipped[20] ^= 0xff
	f.Add(flipped)
	f.Add(append(bytes.Clone(good), make([]byte, 100)...))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in []byte) {
		path := filepath.Join(dir, segmentName(1))
		if err := os.WriteFile(path, in, 0o600); err != nil {
			t.Fatal(err)
		}
		var lsns []uint64
		sc, err := scanWAL([]*segment{{path: path, seq: 1}}, 0, math.MaxUint64, func(lsn uint64, payload []byte) error {
			lsns = append(lsns, lsn)
			return decodeOps(payload, nil)
		})
		var damage *walDamage
		if errors.As(err, &damage) && (damage.offset >= len(in) || damage.offset < 0) {
			t.Fatalf("damage at offset %d of %d bytes", damage.offset, len(in))
		}
		if sc.tornBytes > len(in) || sc.records != len(lsns) {
			t.Fatalf("scan = %+v for %d bytes and %d records", sc, len(in), len(lsns))
		}
		for i, l := range lsns {
			if l != uint64(i+1) {
				t.Fatalf("applied LSNs %v", lsns)
			}
		}
	})
}
