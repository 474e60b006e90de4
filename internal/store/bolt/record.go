package bolt

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// A record is how a sketch is kept in the sketches bucket (schema version
// 1, see migrations/v1.go): format byte, kind tag (sketch.Kind.Tag), flags
// byte, created and updated times as big-endian Unix nanoseconds, then the
// sketch in its kind's encoding (the HLL storage format, the CMS format).
const (
	recordFormat    = 1
	recordHeaderLen = 3 + 8 + 8
	flagMetric      = 1
)

// state is one entry's full state: what a record holds and what the cache
// keeps decoded. An entry is a sketch, a series bucket (a sketch too) or
// a series definition (def set, sk nil); see series.go for their keys.
type state struct {
	sk               sketch.Sketch
	def              *series.Spec
	metric           bool
	created, updated time.Time
}

// appendRecord appends st's record to b.
func appendRecord(b []byte, st *state) []byte {
	var flags byte
	if st.metric {
		flags |= flagMetric
	}
	b = append(b, recordFormat, st.kind().Tag, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(st.created.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(st.updated.UnixNano()))
	if st.def != nil {
		return appendDef(b, st.def)
	}
	return st.sk.AppendBinary(b)
}

// kind is the kind of the sketch, or of a series' buckets.
func (st *state) kind() *sketch.Kind {
	if st.def != nil {
		return st.def.Params.Kind()
	}
	return st.sk.Kind()
}

// decodeEntry parses the record of the entry key: a series definition or
// a sketch.
func decodeEntry(key string, rec []byte) (*state, error) {
	if key == "" || key[0] != prefixSeries {
		return decodeRecord(rec)
	}
	kind, err := recordKind(rec)
	if err != nil {
		return nil, err
	}
	st := &state{
		created: time.Unix(0, int64(binary.BigEndian.Uint64(rec[3:]))).UTC(),
		updated: time.Unix(0, int64(binary.BigEndian.Uint64(rec[11:]))).UTC(),
	}
	if st.def, err = decodeDef(kind, rec[recordHeaderLen:]); err != nil {
		return nil, err
	}
	return st, nil
}

// decodeRecord parses a sketch record as strictly as an upload. The
// returned state shares no memory with rec.
func decodeRecord(rec []byte) (*state, error) {
	kind, err := recordKind(rec)
	if err != nil {
		return nil, err
	}
	st := &state{
		metric:  rec[2]&flagMetric != 0,
		created: time.Unix(0, int64(binary.BigEndian.Uint64(rec[3:]))).UTC(),
		updated: time.Unix(0, int64(binary.BigEndian.Uint64(rec[11:]))).UTC(),
	}
	if st.sk, err = kind.Decode(rec[recordHeaderLen:]); err != nil {
		return nil, err
	}
	return st, nil
}

// recordKind checks a record's header and returns its kind.
func recordKind(rec []byte) (*sketch.Kind, error) {
	if len(rec) < recordHeaderLen {
		return nil, fmt.Errorf("record of %d bytes, header needs %d", len(rec), recordHeaderLen)
	}
	if rec[0] != recordFormat {
		return nil, fmt.Errorf("record format %d, want %d", rec[0], recordFormat)
	}
	if rec[2]&^flagMetric != 0 {
		return nil, fmt.Errorf("record flags %#x unknown", rec[2])
	}
	return sketch.ByTag(rec[1])
}

func (st *state) typ() sketch.Type { return st.sk.Kind().Type }

// spec returns the sketch's spec.
func (st *state) spec() sketch.Spec {
	return sketch.Spec{Params: st.sk.Params(), Metric: st.metric}
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
