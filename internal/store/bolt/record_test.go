package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// storedRecord is one record as a store left it in bbolt.
type storedRecord struct {
	what string // the kind, for messages
	key  string // entry key
	rec  []byte
}

// storedRecords builds a store holding a record of every kind (HLL
// EMPTY, EXPLICIT, SPARSE and FULL, Count-Min, theta, freq, a series
// definition and a series bucket), closes it and returns its records.
func storedRecords(tb testing.TB) []storedRecord {
	tb.Helper()
	s, path := openStore(tb, Options{Now: func() time.Time { return time.Date(2026, 11, 2, 10, 30, 0, 0, time.UTC) }})
	r := rand.New(rand.NewPCG(5, 5))
	sparse := hllParams(14)
	sparse.Expthresh = 0
	ids := func(n int) storetest.Input {
		in := storetest.Input{}
		for range n {
			in.IDs = append(in.IDs, cms.IntID(r.Int64()))
		}
		return in
	}
	kind := func(t sketch.Type) sketch.Spec {
		k, err := sketch.Lookup(t)
		if err != nil {
			tb.Fatal(err)
		}
		return sketch.Spec{Params: k.Default()}
	}
	for _, c := range []struct {
		name string
		spec sketch.Spec
		in   storetest.Input
	}{
		{"hll-empty", hllSpec(11), storetest.Input{}},
		{"hll-explicit", hllSpec(11), ids(5)},
		{"hll-sparse", sketch.Spec{Params: sketch.HLLParams{Params: sparse}}, ids(300)},
		{"hll-full", hllSpec(11), ids(20000)},
		{"cms", cmsSpec(), ids(50)},
		{"theta", kind("theta"), ids(3000)},
		{"freq", kind("freq"), ids(40)},
	} {
		mustCreate(tb, s, c.name, c.spec)
		if len(c.in.IDs) > 0 {
			if _, err := s.Add(ctx, c.name, c.in, false); err != nil {
				tb.Fatal(err)
			}
		}
	}
	spec := &series.Spec{Params: hllSpec(11).Params, TZ: "UTC", Levels: []series.LevelSpec{{Level: series.Hour, Retention: series.Duration{Days: 2}}}}
	if _, _, err := s.CreateSeries(ctx, "s", spec); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.AddSeries(ctx, "s", time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC), ids(10)); err != nil {
		tb.Fatal(err)
	}
	s.Close()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var out []storedRecord
	db.View(func(tx *bbolt.Tx) error {
		for _, b := range []struct {
			name   []byte
			prefix string
		}{{bucketSketches, ""}, {bucketSeries, string(prefixSeries)}, {bucketBuckets, string(prefixBucket)}} {
			tx.Bucket(b.name).ForEach(func(k, v []byte) error {
				what := string(k)
				switch b.prefix {
				case string(prefixSeries):
					what = "series definition"
				case string(prefixBucket):
					what = "series bucket"
				}
				out = append(out, storedRecord{what, b.prefix + string(k), bytes.Clone(v)})
				return nil
			})
		}
		return nil
	})
	reps := map[string]bool{}
	for _, sr := range out {
		if st, err := decodeEntry(sr.key, sr.rec); err != nil {
			tb.Fatalf("%s: %v", sr.what, err)
		} else if st.sk != nil && st.sk.Kind().Type == sketch.TypeHLL {
			reps[st.sk.Representation()] = true
		}
	}
	if len(out) != 9 || len(reps) != 4 {
		tb.Fatalf("%d records, HLL representations %v; want 9 records and all 4 representations", len(out), reps)
	}
	return out
}

// TestEverySingleBitFlipIsCaught: every single-bit flip of every stored
// record of every kind fails decodeEntry (CRC-32C detects every error of
// up to 3 bits in records this size), and every one of a sample of
// random multi-byte corruptions does too. Before checksums, most flips
// in HLL, theta and freq bodies decoded as another valid sketch.
func TestEverySingleBitFlipIsCaught(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, sr := range storedRecords(t) {
		silent := 0
		b := bytes.Clone(sr.rec)
		for i := range len(b) * 8 {
			b[i/8] ^= 1 << (i % 8)
			if _, err := decodeEntry(sr.key, b); err == nil {
				silent++
			}
			b[i/8] ^= 1 << (i % 8)
		}
		for range 2000 {
			copy(b, sr.rec)
			for range 1 + r.IntN(8) {
				b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
			}
			if _, err := decodeEntry(sr.key, b); err == nil && !bytes.Equal(b, sr.rec) {
				silent++
			}
		}
		if silent > 0 {
			t.Errorf("%s: %d corruptions of its %d-byte record decoded", sr.what, silent, len(sr.rec))
		}
		// The same bytes under another key fail too: a value read for the
		// wrong key is damage.
		if _, err := decodeEntry(sr.key+"x", sr.rec); !errors.Is(err, errChecksum) {
			t.Errorf("%s under another key: %v, want a checksum mismatch", sr.what, err)
		}
	}
}

// TestRecordChecksumIsCRC32C: the checksum is CRC-32C (Castagnoli) of the
// entry key and the record, as record.go says, checked here
// with the standard check value of CRC-32C rather than this package's
// own table.
func TestRecordChecksumIsCRC32C(t *testing.T) {
	// CRC-32C("123456789") is 0xe3069283 (RFC 3720, B.4).
	if got := recordCRC("1234", []byte("56789")); got != 0xe3069283 {
		t.Fatalf("recordCRC = %#x, want the CRC-32C check value 0xe3069283", got)
	}
	for _, sr := range storedRecords(t) {
		end := len(sr.rec) - recordCRCLen
		if got := binary.BigEndian.Uint32(sr.rec[end:]); got != recordCRC(sr.key, sr.rec[:end]) || sr.rec[0] != recordFormat {
			t.Errorf("%s: format %d, checksum %#x", sr.what, sr.rec[0], got)
		}
	}
}

// TestLoggedFormat1: a log put written before checksums (format 1) still
// replays; the same bytes stored in bbolt are refused.
func TestLoggedFormat1(t *testing.T) {
	h, _ := hll.New(hllParams(10))
	h.AddInt64(7)
	v1 := []byte{recordFormatV1, 1, 0}
	v1 = binary.BigEndian.AppendUint64(v1, 1)
	v1 = binary.BigEndian.AppendUint64(v1, 2)
	want, _ := h.MarshalBinary()
	v1 = append(v1, want...)
	st, err := decodeLogged("h", v1)
	if err != nil {
		t.Fatalf("decodeLogged(format 1) = %v", err)
	}
	if got := st.sk.AppendBinary(nil); !bytes.Equal(got, want) {
		t.Errorf("decoded %x, want %x", got, want)
	}
	if _, err := decodeEntry("h", v1); err == nil {
		t.Error("decodeEntry accepted a format-1 record from bbolt")
	}
}

// FuzzDecodeEntry: decodeEntry never panics, and whatever it accepts
// carries the checksum of its key and bytes and encodes back to a record
// it accepts too.
func FuzzDecodeEntry(f *testing.F) {
	for _, sr := range storedRecords(f) {
		f.Add(sr.key, sr.rec)
		b := bytes.Clone(sr.rec)
		b[len(b)/2] ^= 1
		f.Add(sr.key, b)
	}
	for _, rec := range expiryRecords(f) {
		f.Add("e", rec)
	}
	f.Add("x", []byte{})
	f.Add("x", []byte{recordFormat, 1, 0})
	f.Add("\x01s", []byte{recordFormat, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, key string, rec []byte) {
		st, err := decodeEntry(key, rec)
		if err != nil {
			return
		}
		end := len(rec) - recordCRCLen
		if binary.BigEndian.Uint32(rec[end:]) != recordCRC(key, rec[:end]) {
			t.Fatalf("accepted a record whose checksum does not match")
		}
		if _, err := decodeEntry(key, appendRecord(nil, key, st)); err != nil {
			t.Fatalf("re-encoded record refused: %v", err)
		}
	})
}

// FuzzDecodeCheckpoint: the checkpoint position decoder never panics and
// accepts only what appendCheckpoint writes.
func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add(appendCheckpoint(nil, 0))
	f.Add(appendCheckpoint(nil, 1<<40))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 7})
	f.Fuzz(func(t *testing.T, v []byte) {
		lsn, err := decodeCheckpoint(v)
		if err == nil && v != nil && !bytes.Equal(appendCheckpoint(nil, lsn), v) {
			t.Fatalf("accepted %x as %d", v, lsn)
		}
	})
}

// expiryRecords are records of sketch "e" with each kind of expiry.
func expiryRecords(tb testing.TB) [][]byte {
	h, _ := hll.New(hllParams(10))
	h.AddInt64(7)
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	var out [][]byte
	for _, x := range []sketch.Expiry{{After: 36 * time.Hour}, {At: at}} {
		st := &state{sk: sketch.NewHLL(h), created: at.Add(-time.Hour), updated: at.Add(-time.Minute), expiry: x}
		out = append(out, appendRecord(nil, "e", st))
	}
	return out
}

// TestRecordExpiry: a sketch's expiry survives encoding, in the layout
// record.go describes (flag bit 1 or 2, then 8 big-endian bytes after the
// times); a record with both flags, or a duration that is not positive,
// is refused, and a flipped bit in the expiry fails the checksum.
func TestRecordExpiry(t *testing.T) {
	recs := expiryRecords(t)
	want := []sketch.Expiry{{After: 36 * time.Hour}, {At: time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)}}
	for i, rec := range recs {
		if got := rec[2]; got != byte(2<<i) {
			t.Errorf("record %d: flags %#x, want %#x", i, got, 2<<i)
		}
		v := binary.BigEndian.Uint64(rec[recordHeaderLen:])
		if i == 0 && time.Duration(v) != want[0].After || i == 1 && int64(v) != want[1].At.UnixNano() {
			t.Errorf("record %d: expiry bytes %d", i, v)
		}
		st, err := decodeEntry("e", rec)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !st.expiry.At.Equal(want[i].At) || st.expiry.After != want[i].After {
			t.Errorf("record %d: decoded expiry %+v, want %+v", i, st.expiry, want[i])
		}
		bad := bytes.Clone(rec)
		bad[recordHeaderLen+3] ^= 1
		if _, err := decodeEntry("e", bad); !errors.Is(err, errChecksum) {
			t.Errorf("record %d with a flipped expiry bit: %v, want a checksum error", i, err)
		}
	}
	reseal := func(rec []byte) []byte {
		end := len(rec) - recordCRCLen
		return binary.BigEndian.AppendUint32(rec[:end:end], recordCRC("e", rec[:end]))
	}
	both := bytes.Clone(recs[0])
	both[2] |= flagExpireAt
	if _, err := decodeEntry("e", reseal(both)); err == nil {
		t.Error("accepted a record with both expiry flags")
	}
	zero := bytes.Clone(recs[0])
	binary.BigEndian.PutUint64(zero[recordHeaderLen:], 0)
	if _, err := decodeEntry("e", reseal(zero)); err == nil {
		t.Error("accepted a record expiring 0 after its last write")
	}
	neg := bytes.Clone(recs[0])
	binary.BigEndian.PutUint64(neg[recordHeaderLen:], uint64(1)<<63)
	if _, err := decodeEntry("e", reseal(neg)); err == nil {
		t.Error("accepted a record expiring a negative time after its last write")
	}
}
