package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"
	"unsafe"

	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// A record is how an entry is kept in bbolt (sketches, series definitions
// and series buckets alike) and in a log put:
//
//	byte 0      record format: 2 (1 before schema version 5, see below)
//	byte 1      kind tag (sketch.Kind.Tag)
//	byte 2      flags (bit 0: estimate exported on /metrics; bit 1:
//	            expires a time after its last write; bit 2: expires at
//	            an instant; bits 1 and 2 only from schema version 7)
//	bytes 3-10  created, big-endian Unix nanoseconds
//	bytes 11-18 updated, big-endian Unix nanoseconds
//	8 bytes     bit 1 only: the time after the last write, big-endian
//	            nanoseconds (positive, sketch.Expiry.After)
//	8 bytes     bit 2 only: the instant, big-endian Unix nanoseconds
//	...         the body: the sketch in its kind's encoding (the HLL
//	            storage format, the CMS format, ...), or a series
//	            definition (appendDef)
//	last 4      format 2 only: CRC-32C (Castagnoli), big-endian, of the
//	            entry's key followed by every byte of the record before it
//
// The checksum covers the key, so a value that moved to another key (a
// flipped bit in a bucket's start time, a page of one sketch read for
// another) fails it too. appendRecord writes it and decodeEntry checks it
// before anything else, so no reader of a stored value can skip it.
//
// Format 1 is format 2 without the checksum. Schema version 5
// (migrations/v5.go) rewrote every stored record to format 2; format 1 is
// still read from log puts written before it (decodeLogged), whose log
// record carries a checksum of its own.
const (
	recordFormat    = 2
	recordFormatV1  = 1
	recordHeaderLen = 3 + 8 + 8
	recordCRCLen    = 4
	flagMetric      = 1
	flagExpireAfter = 2
	flagExpireAt    = 4
	knownFlags      = flagMetric | flagExpireAfter | flagExpireAt
)

// errChecksum is the error of a stored record whose checksum does not
// match its bytes.
var errChecksum = errors.New("checksum mismatch")

// state is one entry's full state: what a record holds and what the cache
// keeps decoded. An entry is a sketch, a series bucket (a sketch too) or
// a series definition (def set, sk nil); see series.go for their keys.
type state struct {
	sk               sketch.Sketch
	def              *series.Spec
	metric           bool
	created, updated time.Time
	// expiry is a sketch's (never a series definition's or bucket's).
	expiry sketch.Expiry
}

// appendRecord appends the record of st, kept under the entry key key,
// to b.
func appendRecord(b []byte, key string, st *state) []byte {
	start := len(b)
	b = appendRecordHeader(b, st.kind().Tag, st)
	if st.def != nil {
		b = appendDef(b, st.def)
	} else {
		b = st.sk.AppendBinary(b)
	}
	return binary.BigEndian.AppendUint32(b, recordCRC(key, b[start:]))
}

// appendRecordBytes is appendRecord with the body given: body is st's
// sketch in its kind's encoding, kept as it is (a restored value keeps
// its bytes).
func appendRecordBytes(b []byte, key string, tag byte, st *state, body []byte) []byte {
	start := len(b)
	b = appendRecordHeader(b, tag, st)
	b = append(b, body...)
	return binary.BigEndian.AppendUint32(b, recordCRC(key, b[start:]))
}

// appendRecordHeader appends what a record holds before its body: the
// format, kind tag, flags, times and expiry.
func appendRecordHeader(b []byte, tag byte, st *state) []byte {
	var flags byte
	if st.metric {
		flags |= flagMetric
	}
	if st.expiry.After > 0 {
		flags |= flagExpireAfter
	}
	if !st.expiry.At.IsZero() {
		flags |= flagExpireAt
	}
	b = append(b, recordFormat, tag, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(st.created.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(st.updated.UnixNano()))
	if flags&flagExpireAfter != 0 {
		b = binary.BigEndian.AppendUint64(b, uint64(st.expiry.After))
	}
	if flags&flagExpireAt != 0 {
		b = binary.BigEndian.AppendUint64(b, uint64(st.expiry.At.UnixNano()))
	}
	return b
}

// recordCRC is the checksum of a record's bytes rec (without the
// checksum) kept under key.
func recordCRC(key string, rec []byte) uint32 {
	// The key's bytes are only read: no copy of them.
	k := unsafe.Slice(unsafe.StringData(key), len(key))
	return crc32.Update(crc32.Update(0, crcTable, k), crcTable, rec)
}

// kind is the kind of the sketch, or of a series' buckets.
func (st *state) kind() *sketch.Kind {
	if st.def != nil {
		return st.def.Params.Kind()
	}
	return st.sk.Kind()
}

// decodeEntry parses the stored record of the entry key (a sketch, a
// series definition or a series bucket) as strictly as an upload. It
// accepts format 2 only, and checks the checksum before anything else:
// errChecksum (wrapped) when it does not match. Other errors name what is
// wrong: a record too short for its header and checksum, an unknown
// format, flags or kind, a body its kind refuses. The returned state
// shares no memory with rec.
func decodeEntry(key string, rec []byte) (*state, error) {
	body, err := checkRecord2(key, rec)
	if err != nil {
		return nil, err
	}
	return decodeBody(key, rec, body)
}

// decodeLogged is decodeEntry for the record of a log put, which may also
// be format 1 (no checksum) if an older binary wrote the log.
func decodeLogged(key string, rec []byte) (*state, error) {
	if len(rec) > 0 && rec[0] == recordFormatV1 {
		if len(rec) < recordHeaderLen {
			return nil, fmt.Errorf("record of %d bytes, header needs %d", len(rec), recordHeaderLen)
		}
		return decodeBody(key, rec, rec[recordHeaderLen:])
	}
	return decodeEntry(key, rec)
}

// checkRecord2 checks a format-2 record's length, format and checksum and
// returns its body.
func checkRecord2(key string, rec []byte) ([]byte, error) {
	if len(rec) < recordHeaderLen+recordCRCLen {
		return nil, fmt.Errorf("record of %d bytes, header and checksum need %d", len(rec), recordHeaderLen+recordCRCLen)
	}
	if rec[0] != recordFormat {
		return nil, fmt.Errorf("record format %d, want %d", rec[0], recordFormat)
	}
	end := len(rec) - recordCRCLen
	if got, want := binary.BigEndian.Uint32(rec[end:]), recordCRC(key, rec[:end]); got != want {
		return nil, fmt.Errorf("%w: stored %08x, computed %08x over %d bytes", errChecksum, got, want, end)
	}
	return rec[recordHeaderLen:end], nil
}

// decodeBody decodes a record whose length and checksum were checked:
// its flags, kind and body.
func decodeBody(key string, rec, body []byte) (*state, error) {
	st, kind, body, err := decodeHeader(rec, body)
	if err != nil {
		return nil, err
	}
	if key != "" && key[0] == prefixSeries {
		if !st.expiry.IsZero() {
			return nil, fmt.Errorf("series record with an expiry (flags %#x)", rec[2])
		}
		st.metric = false
		if st.def, err = decodeDef(kind, body); err != nil {
			return nil, err
		}
		return st, nil
	}
	if st.sk, err = kind.Decode(body); err != nil {
		return nil, err
	}
	return st, nil
}

// decodeHeader decodes what a checked record says before its body: its
// flags, kind, times and expiry. It returns the state without a sketch or
// definition, the kind, and the body after the expiry.
func decodeHeader(rec, body []byte) (*state, *sketch.Kind, []byte, error) {
	if rec[2]&^knownFlags != 0 {
		return nil, nil, nil, fmt.Errorf("record flags %#x unknown", rec[2])
	}
	kind, err := sketch.ByTag(rec[1])
	if err != nil {
		return nil, nil, nil, err
	}
	st := &state{
		metric:  rec[2]&flagMetric != 0,
		created: time.Unix(0, int64(binary.BigEndian.Uint64(rec[3:]))).UTC(),
		updated: time.Unix(0, int64(binary.BigEndian.Uint64(rec[11:]))).UTC(),
	}
	if rec[2]&flagExpireAfter != 0 {
		if len(body) < 8 {
			return nil, nil, nil, fmt.Errorf("record of %d bytes ends in its expiry", len(rec))
		}
		st.expiry.After = time.Duration(binary.BigEndian.Uint64(body))
		if st.expiry.After <= 0 {
			return nil, nil, nil, fmt.Errorf("record expiry %d ns after the last write, want positive", int64(st.expiry.After))
		}
		body = body[8:]
	}
	if rec[2]&flagExpireAt != 0 {
		if len(body) < 8 || st.expiry.After != 0 {
			return nil, nil, nil, fmt.Errorf("record of %d bytes with flags %#x has no room for its expiry instant", len(rec), rec[2])
		}
		st.expiry.At = time.Unix(0, int64(binary.BigEndian.Uint64(body))).UTC()
		body = body[8:]
	}
	return st, kind, body, nil
}

func (st *state) typ() sketch.Type { return st.sk.Kind().Type }

// spec returns the sketch's spec.
func (st *state) spec() sketch.Spec {
	return sketch.Spec{Params: st.sk.Params(), Metric: st.metric, Expiry: st.expiry}
}

// expired reports whether the sketch is expired at now (never for a
// series definition or bucket).
func (st *state) expired(now time.Time) bool {
	return st.def == nil && st.expiry.Expired(st.updated, now)
}

// info describes the state under name.
func (st *state) info(name string) sketch.Info {
	in := sketch.Info{Name: name, Spec: st.spec(), CreatedAt: st.created, UpdatedAt: st.updated}
	st.sk.Describe(&in)
	return in
}

func (st *state) clone() *state {
	c := *st
	if st.sk != nil {
		c.sk = st.sk.Clone()
	}
	return &c
}

// memory approximates the heap the decoded state holds.
func (st *state) memory() int64 {
	if st.def != nil {
		return 512
	}
	return st.sk.MemoryBytes()
}
