package ingest

import (
	"errors"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/murmur"
)

// idHashes hashes ids given as int64 (hll_hash_bigint) or string
// (hll_hash_text), the way the service defines identity.
func idHashes(ids ...any) []uint64 {
	out := []uint64{}
	for _, v := range ids {
		switch v := v.(type) {
		case int64:
			h, _ := murmur.Int64(v, 0)
			out = append(out, h)
		case int:
			h, _ := murmur.Int64(int64(v), 0)
			out = append(out, h)
		case string:
			h, _ := murmur.Bytes([]byte(v), 0)
			out = append(out, h)
		default:
			panic("idHashes: bad type")
		}
	}
	return out
}

// rejection is one input the parsers must refuse.
type rejection struct {
	name   string
	body   string
	err    error  // sentinel
	off    int    // expected Offset, -1 to skip the check
	detail string // substring of Detail
}

// checkRejected asserts that err is an *Error wrapping want.err at want.off
// whose detail mentions want.detail, and that dst came back unchanged.
func checkRejected(tb testing.TB, want rejection, err error, gotLen, wantLen int) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("%q accepted, want %v", want.body, want.err)
	}
	var e *Error
	if !errors.As(err, &e) {
		tb.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	if !errors.Is(err, want.err) {
		tb.Errorf("error %q wraps %v, want %v", err, e.Err, want.err)
	}
	if want.off >= 0 && e.Offset != want.off {
		tb.Errorf("error %q at offset %d, want %d", err, e.Offset, want.off)
	}
	if !strings.Contains(e.Detail(), want.detail) {
		tb.Errorf("detail %q does not mention %q", e.Detail(), want.detail)
	}
	if gotLen != wantLen {
		tb.Errorf("dst length after error = %d, want %d (unchanged)", gotLen, wantLen)
	}
	if len(e.Detail()) > 200 {
		tb.Errorf("detail is %d bytes long: %q", len(e.Detail()), e.Detail())
	}
}

func equalHashes(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var sentinels = []error{ErrSyntax, ErrType, ErrRange, ErrField, ErrTooMany}

// checkWrapsSentinel asserts err is an *Error wrapping one of the sentinels.
func checkWrapsSentinel(tb testing.TB, err error) {
	tb.Helper()
	var e *Error
	if !errors.As(err, &e) {
		tb.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			if len(e.Detail()) > 260 {
				tb.Fatalf("detail is %d bytes long: %q", len(e.Detail()), e.Detail())
			}
			return
		}
	}
	tb.Fatalf("error %v wraps no sentinel", err)
}
