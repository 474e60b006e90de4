package archive

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"time"
)

// Reader reads an archive one record at a time. It holds one record's
// bytes, at most MaxRecordBody, allocated as they arrive: a length read
// off the wire never sizes an allocation by itself. Its errors are
// *Error, naming the record and the offset where it starts.
type Reader struct {
	br     *bufio.Reader
	sum    hash.Hash
	off    int64 // bytes consumed
	index  int   // records read
	counts Counts
	header Header
	body   bytes.Buffer
	done   bool
	err    error
}

// NewReader reads and checks the header of the archive r holds.
func NewReader(r io.Reader) (*Reader, error) {
	ar := &Reader{br: bufio.NewReaderSize(r, 64<<10), sum: sha256.New()}
	var h [HeaderLen]byte
	if err := ar.full(h[:]); err != nil {
		return nil, ar.fail(0, 0, "reading the header", err)
	}
	if string(h[:8]) != Magic {
		return nil, ar.fail(0, 0, fmt.Sprintf("magic %q is not a sketchd archive's %q", h[:8], Magic), ErrCorrupt)
	}
	if got, want := binary.BigEndian.Uint32(h[28:]), crc32.Checksum(h[:28], crcTable); got != want {
		return nil, ar.fail(0, 0, fmt.Sprintf("header checksum %08x, computed %08x", got, want), ErrCorrupt)
	}
	if v := binary.BigEndian.Uint16(h[8:]); v != Version {
		return nil, ar.fail(0, 0, fmt.Sprintf("version %d; this sketchd reads version %d", v, Version), ErrCorrupt)
	}
	if f := binary.BigEndian.Uint16(h[10:]); f != 0 {
		return nil, ar.fail(0, 0, fmt.Sprintf("header flags %#x unknown", f), ErrCorrupt)
	}
	if !allZero(h[21:28]) {
		return nil, ar.fail(0, 0, "reserved header bytes are not zero", ErrCorrupt)
	}
	ar.header = Header{Taken: time.Unix(0, int64(binary.BigEndian.Uint64(h[12:]))).UTC(), Source: h[20]}
	return ar, nil
}

// Header returns the archive's header.
func (r *Reader) Header() Header { return r.header }

// Counts returns the records read so far, by type (after io.EOF: the
// archive's, which its trailer confirmed).
func (r *Reader) Counts() Counts { return r.counts }

// Offset returns the bytes read so far.
func (r *Reader) Offset() int64 { return r.off }

// full reads len(b) bytes into b, through the digest.
func (r *Reader) full(b []byte) error {
	n, err := io.ReadFull(r.br, b)
	r.sum.Write(b[:n])
	r.off += int64(n)
	return err
}

// fail records the error of the record index starting at off.
func (r *Reader) fail(index int, off int64, what string, err error) error {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		what = fmt.Sprintf("%s: the archive ends at byte offset %d", what, r.off)
		err = ErrTruncated
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrTruncated):
	default:
		what = fmt.Sprintf("%s: %v", what, err)
	}
	r.err = &Error{Record: index, Offset: off, What: what, Err: err}
	return r.err
}

// Next returns the next record. After the last one it checks the trailer
// (the counts, the digest of every byte before it, and that nothing
// follows it) and returns io.EOF; any other error is an *Error. The
// record's fields share no memory with the Reader.
func (r *Reader) Next() (*Record, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.done {
		return nil, io.EOF
	}
	index, start := r.index+1, r.off
	var hdr [5]byte
	if err := r.full(hdr[:]); err != nil {
		return nil, r.fail(index, start, "reading a record's type and length (or the trailer)", err)
	}
	t, n := hdr[0], binary.BigEndian.Uint32(hdr[1:])
	if t == TypeTrailer {
		return nil, r.trailer(index, start, n)
	}
	if t < TypeSketch || t > TypeKey {
		return nil, r.fail(index, start, fmt.Sprintf("record type %d unknown", t), ErrCorrupt)
	}
	if n > MaxRecordBody {
		return nil, r.fail(index, start, fmt.Sprintf("%s record of %d bytes passes the bound of %d", TypeName(t), n, MaxRecordBody), ErrCorrupt)
	}
	// CopyN grows the buffer as bytes arrive: a length that lies costs
	// only the bytes that are there.
	r.body.Reset()
	got, err := io.CopyN(&r.body, r.br, int64(n))
	body := r.body.Bytes()
	r.sum.Write(body)
	r.off += got
	if err != nil {
		return nil, r.fail(index, start, fmt.Sprintf("%s record of %d bytes", TypeName(t), n), err)
	}
	var crc [4]byte
	if err := r.full(crc[:]); err != nil {
		return nil, r.fail(index, start, fmt.Sprintf("%s record's checksum", TypeName(t)), err)
	}
	c := crc32.Update(crc32.Checksum(hdr[:], crcTable), crcTable, body)
	if got := binary.BigEndian.Uint32(crc[:]); got != c {
		return nil, r.fail(index, start, fmt.Sprintf("%s record checksum %08x, computed %08x", TypeName(t), got, c), ErrCorrupt)
	}
	rec := &Record{Type: t, Index: index, Offset: start}
	f := &fields{b: body}
	switch t {
	case TypeSketch:
		rec.Sketch = f.sketch()
	case TypeSeries:
		rec.Series = f.series()
	case TypeBucket:
		rec.Bucket = f.bucket()
	case TypeKey:
		rec.Key = f.key()
	}
	if f.err == "" && f.off != len(body) {
		f.err = fmt.Sprintf("%d bytes after the last field", len(body)-f.off)
	}
	if f.err != "" {
		return nil, r.fail(index, start, TypeName(t)+" record: "+f.err, ErrCorrupt)
	}
	r.index = index
	switch t {
	case TypeSketch:
		r.counts.Sketches++
	case TypeSeries:
		r.counts.Series++
	case TypeBucket:
		r.counts.Buckets++
	case TypeKey:
		r.counts.Keys++
	}
	if r.body.Cap() > 1<<20 {
		r.body = bytes.Buffer{} // do not keep a large record's buffer
	}
	return rec, nil
}

// trailer checks the trailer of body length n starting at start.
func (r *Reader) trailer(index int, start int64, n uint32) error {
	if n != trailerBody {
		return r.fail(index, start, fmt.Sprintf("trailer length %d, want %d", n, trailerBody), ErrCorrupt)
	}
	var b [trailerBody]byte
	if err := r.full(b[:]); err != nil {
		return r.fail(index, start, "reading the trailer's counts", err)
	}
	want := r.sum.Sum(nil)
	var d [sha256.Size]byte
	// The digest is read past the hash: it covers what came before.
	dn, err := io.ReadFull(r.br, d[:])
	r.off += int64(dn)
	if err != nil {
		return r.fail(index, start, "reading the trailer's digest", err)
	}
	got := Counts{
		Sketches: binary.BigEndian.Uint64(b[0:]), Series: binary.BigEndian.Uint64(b[8:]),
		Buckets: binary.BigEndian.Uint64(b[16:]), Keys: binary.BigEndian.Uint64(b[24:]),
	}
	if !bytes.Equal(d[:], want) {
		return r.fail(index, start, fmt.Sprintf("trailer digest %x, computed %x over %d bytes", d, want, start+5+trailerBody), ErrCorrupt)
	}
	if got != r.counts {
		return r.fail(index, start, fmt.Sprintf("trailer counts %d sketches, %d series, %d buckets, %d keys; the archive holds %d, %d, %d, %d",
			got.Sketches, got.Series, got.Buckets, got.Keys, r.counts.Sketches, r.counts.Series, r.counts.Buckets, r.counts.Keys), ErrCorrupt)
	}
	if _, err := r.br.ReadByte(); err == nil {
		return r.fail(index, start, fmt.Sprintf("bytes follow the trailer at byte offset %d", r.off), ErrCorrupt)
	} else if !errors.Is(err, io.EOF) {
		return r.fail(index, start, "after the trailer", err)
	}
	r.done = true
	return io.EOF
}

// fields parses a record body; the first problem is kept in err (and
// later calls return zero values).
type fields struct {
	b   []byte
	off int
	err string
}

func (f *fields) fail(format string, args ...any) {
	if f.err == "" {
		f.err = fmt.Sprintf(format, args...)
	}
}

func (f *fields) take(n int, what string) []byte {
	if f.err != "" {
		return nil
	}
	if n < 0 || n > len(f.b)-f.off {
		f.fail("%s of %d bytes at body offset %d passes the body's end (%d bytes)", what, n, f.off, len(f.b))
		return nil
	}
	v := f.b[f.off : f.off+n]
	f.off += n
	return v
}

func (f *fields) u64(what string) uint64 {
	v := f.take(8, what)
	if v == nil {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func (f *fields) byteField(what string) byte {
	v := f.take(1, what)
	if v == nil {
		return 0
	}
	return v[0]
}

// bytes reads a length-prefixed byte string (a copy).
func (f *fields) bytes(what string) []byte {
	l := f.take(4, what+" length")
	if l == nil {
		return nil
	}
	v := f.take(int(binary.BigEndian.Uint32(l)), what)
	if v == nil {
		return nil
	}
	return bytes.Clone(v)
}

func (f *fields) str(what string) string {
	l := f.take(4, what+" length")
	if l == nil {
		return ""
	}
	return string(f.take(int(binary.BigEndian.Uint32(l)), what))
}

func (f *fields) time(what string) time.Time {
	return time.Unix(0, int64(f.u64(what))).UTC()
}

func (f *fields) sketch() *Sketch {
	s := &Sketch{Name: f.str("name"), Kind: f.str("kind"), Params: f.bytes("params")}
	flags := f.byteField("flags")
	s.Created, s.Updated = f.time("created"), f.time("updated")
	after, at := int64(f.u64("expire after")), int64(f.u64("expire at"))
	s.Bytes = f.bytes("bytes")
	if f.err != "" {
		return nil
	}
	switch {
	case flags&^knownFlags != 0:
		f.fail("flags %#x unknown", flags)
	case flags&flagExpireAfter != 0 && flags&flagExpireAt != 0:
		f.fail("flags %#x set both expiries", flags)
	case flags&flagExpireAfter != 0 && after <= 0:
		f.fail("expire after %d ns, want positive", after)
	case flags&flagExpireAfter == 0 && after != 0:
		f.fail("expire after %d ns without its flag", after)
	case flags&flagExpireAt == 0 && at != 0:
		f.fail("expire at %d without its flag", at)
	}
	s.Metric = flags&flagMetric != 0
	s.ExpireAfter = time.Duration(after)
	if flags&flagExpireAt != 0 {
		s.ExpireAt = time.Unix(0, at).UTC()
	}
	return s
}

func (f *fields) series() *Series {
	s := &Series{Name: f.str("name"), Kind: f.str("kind"), Params: f.bytes("params"), Created: f.time("created"),
		TZ: f.str("zone"), LateLimit: f.str("late limit")}
	n := int(f.byteField("level count"))
	for i := 0; i < n && f.err == ""; i++ {
		s.Levels = append(s.Levels, Level{Name: f.str("level name"), Retention: f.str("level retention")})
	}
	s.Proto = f.bytes("proto")
	return s
}

func (f *fields) bucket() *Bucket {
	return &Bucket{Series: f.str("series"), Level: f.str("level"), Start: time.Unix(int64(f.u64("start")), 0).UTC(),
		Updated: f.time("updated"), Bytes: f.bytes("bytes")}
}

func (f *fields) key() *Key {
	k := &Key{Scope: f.str("scope"), Target: f.str("target"), Key: f.str("key"), Created: f.time("created")}
	copy(k.Fingerprint[:], f.take(32, "fingerprint"))
	k.Answer = f.bytes("answer")
	return k
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
