package archive

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sample returns records of every type and the archive holding them.
func sample(t testing.TB) ([]*Record, []byte) {
	t.Helper()
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	recs := []*Record{
		{Type: TypeSketch, Sketch: &Sketch{Name: "dau", Kind: "hll", Params: []byte(`{"log2m":11}`), Metric: true,
			Created: at, Updated: at.Add(time.Second), Bytes: []byte{0x11, 0x8b, 0x7f, 1, 2, 3}}},
		{Type: TypeSketch, Sketch: &Sketch{Name: "exp-after", Kind: "cms", Params: []byte(`{}`), ExpireAfter: 90 * time.Minute,
			Created: at, Updated: at, Bytes: []byte{9}}},
		{Type: TypeSketch, Sketch: &Sketch{Name: "exp-at", Kind: "theta", Params: []byte(`{}`), ExpireAt: at.Add(time.Hour),
			Created: at, Updated: at, Bytes: []byte{}}},
		{Type: TypeSeries, Series: &Series{Name: "visits", Kind: "hll", Params: []byte(`{"log2m":11}`), Created: at, TZ: "Europe/Paris",
			LateLimit: "P2D", Levels: []Level{{"day", "P400D"}, {"month", "P10Y"}}, Proto: []byte{0x11, 0x8b, 0x7f}}},
		{Type: TypeBucket, Bucket: &Bucket{Series: "visits", Level: "day", Start: time.Date(2026, 2, 28, 23, 0, 0, 0, time.UTC),
			Updated: at, Bytes: []byte{0x12, 0x8b, 0x7f, 4, 5}}},
		{Type: TypeKey, Key: &Key{Scope: "s", Target: "dau", Key: "k-1", Created: at, Fingerprint: [32]byte{1, 2, 3}, Answer: []byte("HTTP 200")}},
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Taken: at, Source: SourceBolt})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := writeRecord(w, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return recs, buf.Bytes()
}

func writeRecord(w *Writer, r *Record) error {
	switch r.Type {
	case TypeSketch:
		return w.Sketch(r.Sketch)
	case TypeSeries:
		return w.Series(r.Series)
	case TypeBucket:
		return w.Bucket(r.Bucket)
	}
	return w.Key(r.Key)
}

// readAll reads every record of b.
func readAll(b []byte) ([]*Record, *Reader, error) {
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	var out []*Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out, r, nil
		}
		if err != nil {
			return out, r, err
		}
		out = append(out, rec)
	}
}

func TestRoundTrip(t *testing.T) {
	want, b := sample(t)
	got, r, err := readAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if r.Header().Source != SourceBolt || !r.Header().Taken.Equal(time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)) {
		t.Errorf("header = %+v", r.Header())
	}
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	off := int64(HeaderLen)
	for i := range want {
		g := got[i]
		if g.Index != i+1 || g.Offset != off {
			t.Errorf("record %d: index %d offset %d, want %d %d", i, g.Index, g.Offset, i+1, off)
		}
		off += 5 + int64(binary.BigEndian.Uint32(b[off+1:])) + 4
		g.Index, g.Offset = 0, 0
		if !reflect.DeepEqual(g, want[i]) {
			t.Errorf("record %d = %+v\nwant %+v", i+1, describe(g), describe(want[i]))
		}
	}
	if c := r.Counts(); c != (Counts{Sketches: 3, Series: 1, Buckets: 1, Keys: 1}) {
		t.Errorf("counts = %+v", c)
	}
	if n := r.Offset(); n != int64(len(b)) {
		t.Errorf("offset after EOF = %d, want %d", n, len(b))
	}
	// The trailer's digest is SHA-256 of every byte before it.
	if d := sha256.Sum256(b[:len(b)-32]); !bytes.Equal(d[:], b[len(b)-32:]) {
		t.Errorf("trailer digest is not SHA-256 of the bytes before it")
	}
}

func describe(r *Record) any {
	switch {
	case r.Sketch != nil:
		return *r.Sketch
	case r.Series != nil:
		return *r.Series
	case r.Bucket != nil:
		return *r.Bucket
	case r.Key != nil:
		return *r.Key
	}
	return r
}

// recordAt returns the index of the record (0: header) whose bytes hold
// offset off of the archive b, and where that record starts.
func recordAt(b []byte, off int) (int, int64) {
	if off < HeaderLen {
		return 0, 0
	}
	start, i := HeaderLen, 1
	for {
		end := start + 5 + int(binary.BigEndian.Uint32(b[start+1:]))
		if b[start] == TypeTrailer {
			end += sha256.Size
		} else {
			end += 4
		}
		if off < end {
			return i, int64(start)
		}
		start, i = end, i+1
	}
}

// TestEveryFlippedByteRefused flips each bit of every byte of a small
// archive: each is refused, naming the record that holds the byte and
// where it starts.
func TestEveryFlippedByteRefused(t *testing.T) {
	_, b := sample(t)
	for off := range b {
		for bit := range 8 {
			d := bytes.Clone(b)
			d[off] ^= 1 << bit
			_, _, err := readAll(d)
			var ae *Error
			if !errors.As(err, &ae) {
				t.Fatalf("byte %d bit %d flipped: err = %v, want an *Error", off, bit, err)
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("byte %d bit %d flipped: %v wraps neither ErrCorrupt nor ErrTruncated", off, bit, err)
			}
			idx, start := recordAt(b, off)
			if ae.Record != idx || ae.Offset != start {
				t.Fatalf("byte %d bit %d flipped: error names record %d at %d, want record %d at %d: %v", off, bit, ae.Record, ae.Offset, idx, start, err)
			}
		}
	}
}

// TestEveryTruncationRefused cuts the archive at every length: each is
// refused as truncated, naming the record the cut falls in.
func TestEveryTruncationRefused(t *testing.T) {
	_, b := sample(t)
	for n := range len(b) {
		_, _, err := readAll(b[:n])
		var ae *Error
		if !errors.As(err, &ae) || !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d: err = %v, want ErrTruncated", n, err)
		}
		idx, start := recordAt(b, n)
		if ae.Record != idx || ae.Offset != start {
			t.Fatalf("cut at %d: error names record %d at %d, want %d at %d: %v", n, ae.Record, ae.Offset, idx, start, err)
		}
		if !strings.Contains(err.Error(), "byte offset") {
			t.Fatalf("cut at %d: %v does not say where", n, err)
		}
	}
}

func TestTrailingBytesRefused(t *testing.T) {
	_, b := sample(t)
	_, _, err := readAll(append(bytes.Clone(b), 0))
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "follow the trailer") {
		t.Fatalf("err = %v", err)
	}
}

// TestCountsChecked builds an archive whose records and
// digest are right but whose trailer counts one sketch too many: refused.
func TestCountsChecked(t *testing.T) {
	_, b := sample(t)
	d := bytes.Clone(b)
	tr := len(d) - 32 - trailerBody
	binary.BigEndian.PutUint64(d[tr:], 4)
	sum := sha256.Sum256(d[:len(d)-32])
	copy(d[len(d)-32:], sum[:])
	_, _, err := readAll(d)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "trailer counts") {
		t.Fatalf("err = %v", err)
	}
}

// TestHugeLengthAllocatesLittle: a record claiming MaxRecordBody bytes
// over a short input fails as truncated without allocating the claim.
func TestHugeLengthAllocatesLittle(t *testing.T) {
	_, b := sample(t)
	d := bytes.Clone(b[:HeaderLen])
	rec := []byte{TypeSketch, 0, 0, 0, 0, 1, 2, 3}
	binary.BigEndian.PutUint32(rec[1:], MaxRecordBody)
	d = append(d, rec...)
	var ms1, ms2 runtimeMem
	ms1.read()
	_, _, err := readAll(d)
	ms2.read()
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("err = %v", err)
	}
	if grew := ms2.total - ms1.total; grew > 1<<20 {
		t.Errorf("reading a 16-byte record claiming %d bytes allocated %d bytes", MaxRecordBody, grew)
	}
}

func TestLengthPastBoundRefused(t *testing.T) {
	_, b := sample(t)
	d := bytes.Clone(b[:HeaderLen])
	rec := []byte{TypeSketch, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(rec[1:], MaxRecordBody+1)
	_, _, err := readAll(append(d, rec...))
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "passes the bound") {
		t.Fatalf("err = %v", err)
	}
}

// TestBodyFieldsChecked: a record whose checksum is right but whose body
// does not hold its fields exactly is refused, naming the record.
func TestBodyFieldsChecked(t *testing.T) {
	_, b := sample(t)
	cases := map[string]func(body []byte) []byte{
		"extra byte":        func(body []byte) []byte { return append(body, 0) },
		"short":             func(body []byte) []byte { return body[:len(body)-1] },
		"unknown flag":      func(body []byte) []byte { body[4+3+4+3+4+12] |= 0x80; return body },
		"name past the end": func(body []byte) []byte { binary.BigEndian.PutUint32(body, 1<<30); return body },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			n := int(binary.BigEndian.Uint32(b[HeaderLen+1:]))
			body := mutate(bytes.Clone(b[HeaderLen+5 : HeaderLen+5+n]))
			rec := []byte{TypeSketch, 0, 0, 0, 0}
			binary.BigEndian.PutUint32(rec[1:], uint32(len(body)))
			rec = append(rec, body...)
			rec = binary.BigEndian.AppendUint32(rec, crc32.Checksum(rec, crcTable))
			d := append(bytes.Clone(b[:HeaderLen]), rec...)
			_, _, err := readAll(d)
			var ae *Error
			if !errors.As(err, &ae) || !errors.Is(err, ErrCorrupt) || ae.Record != 1 || ae.Offset != HeaderLen {
				t.Fatalf("err = %v, want ErrCorrupt naming record 1 at %d", err, HeaderLen)
			}
		})
	}
}

func TestWriterRefusesTooLarge(t *testing.T) {
	w, err := NewWriter(io.Discard, Header{})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Sketch(&Sketch{Name: "big", Bytes: make([]byte, MaxRecordBody)})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), `"big"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestNotAnArchive(t *testing.T) {
	for _, in := range []string{"", "hello", strings.Repeat("x", 100), "{\"sketches\": []}"} {
		_, _, err := readAll([]byte(in))
		var ae *Error
		if !errors.As(err, &ae) || ae.Record != 0 {
			t.Errorf("%q: err = %v, want the header named", in, err)
		}
	}
}
