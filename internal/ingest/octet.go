package ingest

import (
	"encoding/binary"
	"slices"
	"strconv"

	"github.com/sketchd/sketchd/internal/murmur"
)

// AppendOctetHashes parses an application/octet-stream body of big-endian
// int64 ids (8 bytes each, no header) and appends one hash per id
// (hll_hash_bigint) to dst. A length that is not a multiple of 8 is
// ErrSyntax; more than maxIDs ids (maxIDs < 0: no limit) is ErrTooMany;
// both are found before anything is appended. An empty body is zero ids.
func AppendOctetHashes(dst []uint64, body []byte, maxIDs int) ([]uint64, error) {
	if e := octetError(body, maxIDs); e != nil {
		return dst, e
	}
	n := len(dst)
	dst = slices.Grow(dst, len(body)/8)[:n+len(body)/8]
	murmur.Int64HashesBigEndian(dst[n:], body)
	return dst, nil
}

// AppendOctetItems is AppendOctetHashes keeping the ids: one Item of Count
// 1 per id.
func AppendOctetItems(dst []Item, body []byte, maxIDs int) ([]Item, error) {
	if e := octetError(body, maxIDs); e != nil {
		return dst, e
	}
	n := len(dst)
	dst = slices.Grow(dst, len(body)/8)[:n+len(body)/8]
	for k, i := n, 0; k < len(dst); k, i = k+1, i+8 {
		dst[k] = Item{ID: ID{Int: int64(binary.BigEndian.Uint64(body[i:]))}, Count: 1}
	}
	return dst, nil
}

func octetError(body []byte, maxIDs int) *Error {
	if r := len(body) % 8; r != 0 {
		return newError(ErrSyntax, len(body)-r, "body length "+strconv.Itoa(len(body))+" is not a multiple of 8 (ids are big-endian int64)")
	}
	if n := len(body) / 8; maxIDs >= 0 && n > maxIDs {
		return tooMany(maxIDs*8, "", maxIDs)
	}
	return nil
}
