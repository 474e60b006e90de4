// Package backup turns a store's contents into archive records and back:
// what every backend shares when it writes GET /v1/backup and when
// "sketchd restore" or "sketchd copy" loads an archive into it.
//
// An archive is checked twice over. internal/archive checks its framing
// and integrity (a checksum per record, a digest of the whole stream); a
// Checker here checks what the records mean, as strictly as an upload:
// names, kinds and bytes the sketch registry accepts, series definitions
// a create would accept, buckets of a series defined before them, each
// type's records in strictly increasing key order (so no key appears
// twice), and the types in their order (sketches, series, buckets, keys).
// A restore runs a Checker over the whole archive before it writes, and
// again as it writes, committing only once the reader has confirmed the
// trailer.
package backup

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/sketchd/sketchd/internal/archive"
	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// SketchRecord is the record of the sketch name, whose stored bytes are b
// (they must decode as a sketch of type t with parameters p; the caller
// checked them), with its metadata.
func SketchRecord(name string, t sketch.Type, p sketch.Params, b []byte, metric bool, x sketch.Expiry, created, updated time.Time) (*archive.Sketch, error) {
	params, err := sketch.ParamsJSON(p)
	if err != nil {
		return nil, err
	}
	return &archive.Sketch{
		Name: name, Kind: string(t), Params: params, Metric: metric,
		ExpireAfter: x.After, ExpireAt: x.At, Created: created, Updated: updated, Bytes: b,
	}, nil
}

// SeriesRecord is the record of the series name with spec.
func SeriesRecord(name string, spec *series.Spec, created time.Time) (*archive.Series, error) {
	empty, err := spec.Params.New()
	if err != nil {
		return nil, err
	}
	params, err := sketch.ParamsJSON(spec.Params)
	if err != nil {
		return nil, err
	}
	rec := &archive.Series{
		Name: name, Kind: string(spec.Params.Kind().Type), Params: params, Created: created,
		TZ: spec.TZ, LateLimit: spec.LateLimit.String(), Proto: empty.AppendBinary(nil),
	}
	for _, l := range spec.Levels {
		rec.Levels = append(rec.Levels, archive.Level{Name: l.Level.String(), Retention: l.Retention.String()})
	}
	return rec, nil
}

// KeyRecord is the record of an idempotency key.
func KeyRecord(id idem.ID, rec idem.Record) *archive.Key {
	return &archive.Key{Scope: id.Scope, Target: id.Target, Key: id.Key, Created: rec.Created, Fingerprint: rec.Fingerprint, Answer: rec.Answer}
}

// Sketch decodes a sketch record as strictly as an upload: its name, its
// kind and bytes, its expiry. The sketch shares no memory with rec.
func Sketch(rec *archive.Sketch) (sketch.Sketch, sketch.Expiry, error) {
	if err := sketch.ValidateName(rec.Name); err != nil {
		return nil, sketch.Expiry{}, err
	}
	sk, err := decode(rec.Kind, rec.Bytes)
	if err != nil {
		return nil, sketch.Expiry{}, err
	}
	x := sketch.Expiry{After: rec.ExpireAfter, At: rec.ExpireAt}
	if x.After > sketch.MaxExpireAfter {
		return nil, sketch.Expiry{}, fmt.Errorf("expire after %s passes the cap %s", x.After, sketch.MaxDurationText)
	}
	return sk, x, nil
}

func decode(kindName string, b []byte) (sketch.Sketch, error) {
	kind, err := sketch.LookupFor(sketch.Type(kindName), b)
	if err != nil {
		return nil, err
	}
	return kind.Decode(bytes.Clone(b))
}

// Series decodes a series record into the spec a create would accept.
func Series(rec *archive.Series) (*series.Spec, error) {
	if err := sketch.ValidateName(rec.Name); err != nil {
		return nil, err
	}
	empty, err := decode(rec.Kind, rec.Proto)
	if err != nil {
		return nil, fmt.Errorf("proto: %w", err)
	}
	spec := &series.Spec{Params: empty.Params(), TZ: rec.TZ}
	if spec.LateLimit, err = series.ParseDuration(rec.LateLimit); err != nil {
		return nil, fmt.Errorf("late limit: %w", err)
	}
	if len(rec.Levels) > len(series.Levels) {
		return nil, fmt.Errorf("%d levels", len(rec.Levels))
	}
	for _, l := range rec.Levels {
		lv, err := series.ParseLevel(l.Name)
		if err != nil {
			return nil, err
		}
		r, err := series.ParseDuration(l.Retention)
		if err != nil {
			return nil, fmt.Errorf("level %s retention: %w", l.Name, err)
		}
		spec.Levels = append(spec.Levels, series.LevelSpec{Level: lv, Retention: r})
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return spec, nil
}

// Bucket decodes a bucket record of a series with spec: its level must be
// one the series keeps, its start aligned to the level in the series'
// zone, its bytes of the series' kind.
func Bucket(rec *archive.Bucket, spec *series.Spec) (series.Level, sketch.Sketch, error) {
	lv, err := series.ParseLevel(rec.Level)
	if err != nil {
		return 0, nil, err
	}
	if !slices.ContainsFunc(spec.Levels, func(l series.LevelSpec) bool { return l.Level == lv }) {
		return 0, nil, fmt.Errorf("the series keeps no %s level", lv)
	}
	loc, err := time.LoadLocation(spec.TZ)
	if err != nil {
		return 0, nil, err
	}
	if !lv.Aligned(rec.Start.In(loc), loc) {
		return 0, nil, fmt.Errorf("start %s is not the start of a %s in %s", rec.Start.Format(time.RFC3339), lv, spec.TZ)
	}
	sk, err := decode(string(spec.Params.Kind().Type), rec.Bytes)
	if err != nil {
		return 0, nil, err
	}
	return lv, sk, nil
}

// Key decodes a key record.
func Key(rec *archive.Key) (idem.ID, idem.Record, error) {
	if rec.Key == "" || len(rec.Key) > idem.MaxKeyLen {
		return idem.ID{}, idem.Record{}, fmt.Errorf("idempotency key of %d bytes", len(rec.Key))
	}
	return idem.ID{Scope: rec.Scope, Target: rec.Target, Key: rec.Key},
		idem.Record{Fingerprint: rec.Fingerprint, Answer: bytes.Clone(rec.Answer), Created: rec.Created}, nil
}

// Checker checks what an archive's records mean, one at a time, in
// order: Check each record, then Done. It keeps the series' definitions
// (to check their buckets) and the last key of each type, nothing else.
type Checker struct {
	series map[string]*series.Spec
	last   *archive.Record
}

// NewChecker returns a Checker for one archive.
func NewChecker() *Checker { return &Checker{series: map[string]*series.Spec{}} }

// Decoded is what Check decoded of a record, for a restore to write
// without decoding it again: a sketch record's sketch and expiry, a
// series record's spec, a bucket record's level and sketch, a key
// record's ID and record.
type Decoded struct {
	Sketch sketch.Sketch
	Expiry sketch.Expiry
	Spec   *series.Spec
	Level  series.Level
	ID     idem.ID
	Key    idem.Record
}

// Check checks rec, which follows the records checked before it, and
// returns what it decoded. Its error names the record (index, offset,
// what it holds).
func (c *Checker) Check(rec *archive.Record) (Decoded, error) {
	d, err := c.check(rec)
	if err != nil {
		return Decoded{}, &archive.Error{Record: rec.Index, Offset: rec.Offset, What: Label(rec) + ": " + err.Error(), Err: archive.ErrCorrupt}
	}
	c.last = rec
	return d, nil
}

func (c *Checker) check(rec *archive.Record) (d Decoded, err error) {
	if c.last != nil {
		if c.last.Type > rec.Type {
			return d, fmt.Errorf("a %s record after a %s record; an archive holds sketches, series, buckets, then keys", archive.TypeName(rec.Type), archive.TypeName(c.last.Type))
		}
		if c.last.Type == rec.Type && compare(c.last, rec) >= 0 {
			return d, fmt.Errorf("not after the record before it (%s): each type's records are in strictly increasing order", Label(c.last))
		}
	}
	switch rec.Type {
	case archive.TypeSketch:
		d.Sketch, d.Expiry, err = Sketch(rec.Sketch)
	case archive.TypeSeries:
		if d.Spec, err = Series(rec.Series); err == nil {
			c.series[rec.Series.Name] = d.Spec
		}
	case archive.TypeBucket:
		if d.Spec = c.series[rec.Bucket.Series]; d.Spec == nil {
			return d, fmt.Errorf("no series %q before it", rec.Bucket.Series)
		}
		d.Level, d.Sketch, err = Bucket(rec.Bucket, d.Spec)
	case archive.TypeKey:
		d.ID, d.Key, err = Key(rec.Key)
	default:
		err = fmt.Errorf("record type %d", rec.Type)
	}
	return d, err
}

// compare orders two records of one type by their key.
func compare(a, b *archive.Record) int {
	switch a.Type {
	case archive.TypeSketch:
		return cmp.Compare(a.Sketch.Name, b.Sketch.Name)
	case archive.TypeSeries:
		return cmp.Compare(a.Series.Name, b.Series.Name)
	case archive.TypeBucket:
		return cmp.Or(cmp.Compare(a.Bucket.Series, b.Bucket.Series), cmp.Compare(a.Bucket.Level, b.Bucket.Level), a.Bucket.Start.Compare(b.Bucket.Start))
	}
	return cmp.Or(cmp.Compare(a.Key.Target, b.Key.Target), cmp.Compare(a.Key.Scope, b.Key.Scope), cmp.Compare(a.Key.Key, b.Key.Key))
}

// Label names a record for a message: sketch "a", series "s", bucket day
// 2026-11-01T00:00:00Z of series "s", idempotency key "k"; never a scope.
func Label(rec *archive.Record) string {
	switch {
	case rec.Sketch != nil:
		return "sketch " + quote(rec.Sketch.Name)
	case rec.Series != nil:
		return "series " + quote(rec.Series.Name)
	case rec.Bucket != nil:
		return fmt.Sprintf("bucket %s %s of series %s", quote(rec.Bucket.Level), rec.Bucket.Start.UTC().Format(time.RFC3339), quote(rec.Bucket.Series))
	case rec.Key != nil:
		return "idempotency key " + quote(rec.Key.Key)
	}
	return archive.TypeName(rec.Type)
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// Verify reads the whole archive r holds, checking its framing, checksums
// and digest (archive.Reader) and what every record means (Checker),
// and returns its header and counts. progress, if not nil, is called
// after each record with the bytes read so far.
func Verify(r *archive.Reader, progress func(read int64)) (archive.Counts, error) {
	c := NewChecker()
	for {
		rec, err := r.Next()
		if err != nil {
			if err == io.EOF {
				return r.Counts(), nil
			}
			return r.Counts(), err
		}
		if _, err := c.Check(rec); err != nil {
			return r.Counts(), err
		}
		if progress != nil {
			progress(r.Offset())
		}
	}
}

// Summary is what "sketchd copy" compares between a source and its
// copy: the records of each type, and a SHA-256 over every record's
// content in archive order (its identity, kind, bytes, flags and times).
// Times count to the microsecond and an expiry's duration to the
// second, what every backend keeps; the header's time and source are
// left out.
type Summary struct {
	Counts archive.Counts
	Digest [sha256.Size]byte
}

// Summarize reads the whole archive r holds (checking it as Verify does)
// and returns its Summary.
func Summarize(r *archive.Reader) (Summary, error) {
	h := sha256.New()
	c := NewChecker()
	var b []byte
	for {
		rec, err := r.Next()
		if err == io.EOF {
			var s Summary
			s.Counts = r.Counts()
			h.Sum(s.Digest[:0])
			return s, nil
		}
		if err != nil {
			return Summary{}, err
		}
		if _, err := c.Check(rec); err != nil {
			return Summary{}, err
		}
		b = appendContent(b[:0], rec)
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
}

func appendContent(b []byte, rec *archive.Record) []byte {
	str := func(s string) { b = binary.BigEndian.AppendUint32(b, uint32(len(s))); b = append(b, s...) }
	t := func(v time.Time) {
		b = binary.BigEndian.AppendUint64(b, uint64(v.Truncate(time.Microsecond).UnixMicro()))
	}
	b = append(b, rec.Type)
	switch {
	case rec.Sketch != nil:
		s := rec.Sketch
		str(s.Name)
		str(s.Kind)
		if s.Metric {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		t(s.Created)
		t(s.Updated)
		b = binary.BigEndian.AppendUint64(b, uint64(s.ExpireAfter/time.Second))
		if !s.ExpireAt.IsZero() {
			t(s.ExpireAt)
		}
		str(string(s.Bytes))
	case rec.Series != nil:
		s := rec.Series
		str(s.Name)
		str(s.Kind)
		t(s.Created)
		str(s.TZ)
		str(s.LateLimit)
		for _, l := range s.Levels {
			str(l.Name)
			str(l.Retention)
		}
		str(string(s.Proto))
	case rec.Bucket != nil:
		k := rec.Bucket
		str(k.Series)
		str(k.Level)
		t(k.Start)
		t(k.Updated)
		str(string(k.Bytes))
	case rec.Key != nil:
		k := rec.Key
		str(k.Scope)
		str(k.Target)
		str(k.Key)
		t(k.Created)
		b = append(b, k.Fingerprint[:]...)
		str(string(k.Answer))
	}
	return b
}
