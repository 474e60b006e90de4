package archive

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReader: no input panics the reader; every error is an *Error
// wrapping ErrCorrupt or ErrTruncated and naming an offset inside the
// input; the bytes read never pass the input; a record is never larger
// than the input that held it.
func FuzzReader(f *testing.F) {
	_, b := sample(f)
	f.Add(b)
	f.Add(b[:HeaderLen])
	f.Add(b[:len(b)-1])
	f.Add([]byte(Magic))
	f.Add([]byte{})
	d := bytes.Clone(b)
	d[HeaderLen+7] ^= 1
	f.Add(d)
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := NewReader(bytes.NewReader(in))
		if err != nil {
			checkErr(t, in, err)
			return
		}
		for {
			rec, err := r.Next()
			if err == io.EOF {
				if r.Offset() != int64(len(in)) {
					t.Fatalf("EOF at offset %d of %d bytes", r.Offset(), len(in))
				}
				return
			}
			if err != nil {
				checkErr(t, in, err)
				return
			}
			if rec.Offset >= int64(len(in)) || r.Offset() > int64(len(in)) {
				t.Fatalf("record at %d, read %d, of %d bytes", rec.Offset, r.Offset(), len(in))
			}
		}
	})
}

func checkErr(t *testing.T, in []byte, err error) {
	t.Helper()
	var ae *Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v is not an *Error", err)
	}
	if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
		t.Fatalf("error %v wraps neither sentinel", err)
	}
	if ae.Offset < 0 || ae.Offset > int64(len(in)) {
		t.Fatalf("error %v names offset %d of %d bytes", err, ae.Offset, len(in))
	}
}
