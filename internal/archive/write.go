package archive

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"time"
)

// Writer writes an archive to an io.Writer, one record at a time: it
// keeps one record's bytes and a buffer, never the archive. Close writes
// the trailer; an archive not closed has none and every Reader refuses
// it. A Writer is not safe for concurrent use. After an error every call
// returns it.
type Writer struct {
	bw     *bufio.Writer
	sum    hash.Hash
	counts Counts
	buf    []byte
	n      int64
	err    error
	closed bool
}

// NewWriter writes h's header to w and returns the Writer of the records
// that follow.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	aw := &Writer{sum: sha256.New()}
	aw.bw = bufio.NewWriterSize(io.MultiWriter(w, aw.sum), 64<<10)
	b := make([]byte, 0, HeaderLen)
	b = append(b, Magic...)
	b = binary.BigEndian.AppendUint16(b, Version)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(h.Taken.UnixNano()))
	b = append(b, h.Source, 0, 0, 0, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
	if err := aw.write(b); err != nil {
		return nil, err
	}
	return aw, nil
}

// Counts returns the records written so far, by type.
func (w *Writer) Counts() Counts { return w.counts }

// Written returns the bytes written so far (some may still be buffered).
func (w *Writer) Written() int64 { return w.n }

func (w *Writer) write(b []byte) error {
	if w.err != nil {
		return w.err
	}
	if _, err := w.bw.Write(b); err != nil {
		w.err = fmt.Errorf("archive: write: %w", err)
		return w.err
	}
	w.n += int64(len(b))
	return nil
}

// record frames the body built by fill as a record of type t.
func (w *Writer) record(t byte, what string, fill func(b []byte) []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("archive: write after Close")
	}
	b := append(w.buf[:0], t, 0, 0, 0, 0)
	b = fill(b)
	body := len(b) - 5
	if body > MaxRecordBody {
		return fmt.Errorf("archive: %s: a body of %d bytes passes the %d-byte bound: %w", what, body, MaxRecordBody, ErrTooLarge)
	}
	binary.BigEndian.PutUint32(b[1:], uint32(body))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
	w.buf = b
	if len(w.buf) > 1<<20 {
		w.buf = nil // do not keep a large record's buffer
	}
	return w.write(b)
}

// Sketch writes s.
func (w *Writer) Sketch(s *Sketch) error {
	var flags byte
	if s.Metric {
		flags |= flagMetric
	}
	if s.ExpireAfter != 0 {
		flags |= flagExpireAfter
	}
	if !s.ExpireAt.IsZero() {
		flags |= flagExpireAt
	}
	err := w.record(TypeSketch, "sketch "+quote(s.Name), func(b []byte) []byte {
		b = appendString(b, s.Name)
		b = appendString(b, s.Kind)
		b = appendBytes(b, s.Params)
		b = append(b, flags)
		b = appendTime(b, s.Created)
		b = appendTime(b, s.Updated)
		b = binary.BigEndian.AppendUint64(b, uint64(s.ExpireAfter))
		if flags&flagExpireAt != 0 {
			b = appendTime(b, s.ExpireAt)
		} else {
			b = binary.BigEndian.AppendUint64(b, 0)
		}
		return appendBytes(b, s.Bytes)
	})
	if err == nil {
		w.counts.Sketches++
	}
	return err
}

// Series writes s; its buckets follow it.
func (w *Writer) Series(s *Series) error {
	if len(s.Levels) > 255 {
		return fmt.Errorf("archive: series %s: %d levels", quote(s.Name), len(s.Levels))
	}
	err := w.record(TypeSeries, "series "+quote(s.Name), func(b []byte) []byte {
		b = appendString(b, s.Name)
		b = appendString(b, s.Kind)
		b = appendBytes(b, s.Params)
		b = appendTime(b, s.Created)
		b = appendString(b, s.TZ)
		b = appendString(b, s.LateLimit)
		b = append(b, byte(len(s.Levels)))
		for _, l := range s.Levels {
			b = appendString(b, l.Name)
			b = appendString(b, l.Retention)
		}
		return appendBytes(b, s.Proto)
	})
	if err == nil {
		w.counts.Series++
	}
	return err
}

// Bucket writes b.
func (w *Writer) Bucket(bk *Bucket) error {
	err := w.record(TypeBucket, fmt.Sprintf("bucket %s %s of series %s", bk.Level, bk.Start.UTC().Format(time.RFC3339), quote(bk.Series)), func(b []byte) []byte {
		b = appendString(b, bk.Series)
		b = appendString(b, bk.Level)
		b = binary.BigEndian.AppendUint64(b, uint64(bk.Start.Unix()))
		b = appendTime(b, bk.Updated)
		return appendBytes(b, bk.Bytes)
	})
	if err == nil {
		w.counts.Buckets++
	}
	return err
}

// Key writes k.
func (w *Writer) Key(k *Key) error {
	err := w.record(TypeKey, "idempotency key "+quote(k.Key), func(b []byte) []byte {
		b = appendString(b, k.Scope)
		b = appendString(b, k.Target)
		b = appendString(b, k.Key)
		b = appendTime(b, k.Created)
		b = append(b, k.Fingerprint[:]...)
		return appendBytes(b, k.Answer)
	})
	if err == nil {
		w.counts.Keys++
	}
	return err
}

// Close writes the trailer (the counts and the digest of every byte
// before it) and flushes. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return nil
	}
	w.closed = true
	b := make([]byte, 0, 5+trailerBody+sha256.Size)
	b = append(b, TypeTrailer)
	b = binary.BigEndian.AppendUint32(b, trailerBody)
	b = binary.BigEndian.AppendUint64(b, w.counts.Sketches)
	b = binary.BigEndian.AppendUint64(b, w.counts.Series)
	b = binary.BigEndian.AppendUint64(b, w.counts.Buckets)
	b = binary.BigEndian.AppendUint64(b, w.counts.Keys)
	if err := w.write(b); err != nil {
		return err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("archive: write: %w", err)
		return w.err
	}
	// Everything before the digest went through the hash; the digest
	// itself is written past it.
	d := w.sum.Sum(nil)
	if err := w.write(d); err != nil {
		return err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("archive: write: %w", err)
		return w.err
	}
	return nil
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func appendBytes(b, v []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// appendTime appends t as Unix nanoseconds (the zero time as 0).
func appendTime(b []byte, t time.Time) []byte {
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	return binary.BigEndian.AppendUint64(b, uint64(ns))
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
