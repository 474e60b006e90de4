package bolt

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"slices"

	"github.com/sketchd/sketchd/internal/poison"
)

// Reading the log at open. A record that fails its check (short, a length
// that does not fit, a bad CRC) is one of two things:
//
//   - a torn tail: a batch cut short by a crash. It can only be the last
//     bytes of the last segment holding data, and no intact record
//     follows it. Those bytes were never acknowledged; they are dropped and
//     the drop is logged with its size.
//   - damage: anything else, i.e. an intact record follows it in the same
//     segment or a later segment holds data. Acknowledged records would be
//     lost, so open stops, naming the file and offset, and leaves every
//     file as it is.
//
// A truncation that cuts the last segment at an arbitrary point looks
// exactly like a torn tail: nothing in the file tells them apart.

// walDamage describes a record that failed its check and is not a torn
// tail.
type walDamage struct {
	seg    *segment
	offset int
	reason string
	later  []*segment // segments after it that hold data
}

func (d *walDamage) Error() string {
	return fmt.Sprintf("write-ahead log segment %s is damaged at offset %d (%s) and intact records follow it", d.seg.path, d.offset, d.reason)
}

// walScan is what reading the log found.
type walScan struct {
	last      uint64 // LSN of the last record applied (after, if none)
	records   int
	tornPath  string // segment ending in a torn record, if any
	tornAt    int    // its offset
	tornBytes int    // bytes dropped there
	damage    *walDamage
}

// scanWAL calls fn for every intact record of segs with an LSN in
// (after, until], in order. It stops at a torn tail (recorded in the
// result) or at damage (recorded, with the error also returned), and
// returns an error for anything else unreadable.
func scanWAL(segs []*segment, after, until uint64, fn func(lsn uint64, payload []byte) error) (walScan, error) {
	sc := walScan{last: after}
	lastData := -1
	for i, seg := range segs {
		if fi, err := os.Stat(seg.path); err != nil {
			return sc, fmt.Errorf("wal: %w", err)
		} else if fi.Size() > 0 {
			lastData = i
		}
	}
	seen := after // the last LSN read, applied or not
	for i, seg := range segs[:lastData+1] {
		data, err := os.ReadFile(seg.path)
		if err != nil {
			return sc, fmt.Errorf("wal: %w", err)
		}
		off := 0
		for off < len(data) {
			payload, n, reason := checkRecord(data[off:])
			if reason != "" {
				if i == lastData && !intactAfter(data[off+1:], seen) {
					sc.tornPath, sc.tornAt, sc.tornBytes = seg.path, off, len(data)-off
					return sc, nil
				}
				sc.damage = &walDamage{seg: seg, offset: off, reason: reason, later: segs[i+1 : lastData+1]}
				return sc, sc.damage
			}
			lsn := binary.BigEndian.Uint64(payload)
			seen = max(seen, lsn)
			if lsn > until {
				return sc, nil
			}
			if lsn > after {
				if lsn != sc.last+1 {
					return sc, fmt.Errorf("wal: %s at offset %d holds record %d where %d was due: records are missing (a data file older than its log, or a lost segment)", seg.path, off, lsn, sc.last+1)
				}
				if err := fn(lsn, payload[8:]); err != nil {
					return sc, fmt.Errorf("wal: %s at offset %d: record %d: %w", seg.path, off, lsn, err)
				}
				sc.last = lsn
				sc.records++
			}
			off += n
		}
		// Nothing replayed may keep a slice of the segment.
		poison.Release(data)
	}
	return sc, nil
}

// readRecord parses one record at the start of b.
func readRecord(b []byte) (payload []byte, n int, ok bool) {
	payload, n, reason := checkRecord(b)
	return payload, n, reason == ""
}

// checkRecord parses one record at the start of b, or says why it cannot.
func checkRecord(b []byte) (payload []byte, n int, reason string) {
	if len(b) < walRecordHeader {
		return nil, 0, fmt.Sprintf("%d bytes left, a record header needs %d", len(b), walRecordHeader)
	}
	size := binary.BigEndian.Uint32(b)
	switch {
	case size < 8:
		return nil, 0, fmt.Sprintf("record length %d is below the 8-byte LSN", size)
	case size > maxWALRecord:
		return nil, 0, fmt.Sprintf("record length %d is over the %d limit", size, maxWALRecord)
	case int(size) > len(b)-walRecordHeader:
		return nil, 0, fmt.Sprintf("record length %d runs past the end of the file", size)
	}
	payload = b[walRecordHeader : walRecordHeader+int(size)]
	if crc32.Checksum(payload, crcTable) != binary.BigEndian.Uint32(b[4:]) {
		return nil, 0, "checksum mismatch"
	}
	return payload, walRecordHeader + int(size), ""
}

// intactAfter reports whether b holds, at any offset, an intact record
// with an LSN above seen: then what failed its check before it was not a
// torn tail. Cheap tests (a length that fits, a plausible LSN) come
// before the checksum, so scanning garbage or zeros is linear.
func intactAfter(b []byte, seen uint64) bool {
	for i := 0; i+walRecordHeader+8 <= len(b); i++ {
		size := binary.BigEndian.Uint32(b[i:])
		if size < 8 || int(size) > len(b)-i-walRecordHeader {
			continue
		}
		lsn := binary.BigEndian.Uint64(b[i+walRecordHeader:])
		if lsn <= seen || lsn-seen > 1<<32 {
			continue
		}
		payload := b[i+walRecordHeader : i+walRecordHeader+int(size)]
		if crc32.Checksum(payload, crcTable) == binary.BigEndian.Uint32(b[i+4:]) {
			return true
		}
	}
	return false
}

// walLoss is what replay drops past a damaged record: the bytes from it
// on (and every later segment holding data), the intact records among
// them, which were acknowledged writes, and the entries those touch.
type walLoss struct {
	bytes             int64
	records           int    // intact records dropped
	firstLSN, lastLSN uint64 // their LSNs (0 when none)
	touched           []string
}

// lost reads what replay drops past d, having read records up to LSN
// seen. Intact records are found as intactAfter finds them (a length that
// fits, a plausible LSN, a matching checksum), each skipped whole once
// found.
func (d *walDamage) lost(seen uint64) (walLoss, error) {
	var l walLoss
	names := map[string]bool{}
	for i, seg := range append([]*segment{d.seg}, d.later...) {
		data, err := os.ReadFile(seg.path)
		if err != nil {
			return l, fmt.Errorf("wal: %w", err)
		}
		from := 0
		if i == 0 {
			from = d.offset
		}
		l.bytes += int64(len(data) - from)
		intactRecords(data[from:], seen, func(lsn uint64, payload []byte) {
			l.records++
			if l.firstLSN == 0 {
				l.firstLSN = lsn
			}
			l.lastLSN = lsn
			seen = max(seen, lsn)
			opNames(payload, names)
		})
	}
	l.touched = sortedLabels(names)
	return l, nil
}

// intactRecords calls fn for every intact record in b with an LSN above
// seen (and within 2^32 of it), in order, skipping over each one found.
func intactRecords(b []byte, seen uint64, fn func(lsn uint64, payload []byte)) {
	for i := 0; i+walRecordHeader+8 <= len(b); {
		size := binary.BigEndian.Uint32(b[i:])
		if size < 8 || int(size) > len(b)-i-walRecordHeader {
			i++
			continue
		}
		lsn := binary.BigEndian.Uint64(b[i+walRecordHeader:])
		if lsn <= seen || lsn-seen > 1<<32 {
			i++
			continue
		}
		payload := b[i+walRecordHeader : i+walRecordHeader+int(size)]
		if crc32.Checksum(payload, crcTable) != binary.BigEndian.Uint32(b[i+4:]) {
			i++
			continue
		}
		fn(lsn, payload[8:])
		seen = lsn
		i += walRecordHeader + int(size)
	}
}

// opNames adds the labels (opLabel) of what a record payload (after its
// LSN) touches to names, as far as it parses.
func opNames(payload []byte, names map[string]bool) {
	decodeOps(payload, func(o *op) error {
		names[opLabel(o)] = true
		return nil
	})
}

// opLabel names what o changes: the entry (entryLabel), or for opKey the
// idempotency key (keyLabel).
func opLabel(o *op) string {
	if o.typ == opKey {
		return keyLabel([]byte(o.name))
	}
	return entryLabel(o.name)
}

// sortedLabels returns the labels in names, sorted.
func sortedLabels(names map[string]bool) []string {
	return slices.Sorted(maps.Keys(names))
}
