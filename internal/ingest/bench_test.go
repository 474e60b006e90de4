package ingest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/murmur"
)

const benchIDs = 10000

// benchInts are typical user ids: half small (< 10^7), half anywhere in
// int64 (mostly 18-19 digits, half of them negative).
func benchInts() []int64 {
	r := rand.New(rand.NewPCG(1, 2))
	v := make([]int64, benchIDs)
	for i := range v {
		if i%2 == 0 {
			v[i] = int64(r.IntN(10_000_000))
		} else {
			v[i] = int64(r.Uint64())
		}
	}
	return v
}

// benchTexts are short string ids such as "user-1234567" or "a1b2c3d4e5".
func benchTexts() []string {
	r := rand.New(rand.NewPCG(3, 4))
	v := make([]string, benchIDs)
	for i := range v {
		if i%2 == 0 {
			v[i] = "user-" + strconv.Itoa(r.IntN(10_000_000))
		} else {
			v[i] = strconv.FormatUint(r.Uint64(), 36)
		}
	}
	return v
}

// uuidTexts are 36-character UUID-like string ids (8-4-4-4-12 hex).
func uuidTexts() []string {
	r := rand.New(rand.NewPCG(11, 12))
	v := make([]string, benchIDs)
	for i := range v {
		h := fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
		v[i] = h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	}
	return v
}

func jsonBody(tb testing.TB, key string, v any, indent bool) []byte {
	tb.Helper()
	m := map[string]any{key: v}
	var b []byte
	var err error
	if indent {
		b, err = json.MarshalIndent(m, "", "  ")
	} else {
		b, err = json.Marshal(m)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func lineBody[T any](v []T, format func(T) string) []byte {
	var b bytes.Buffer
	for _, x := range v {
		b.WriteString(format(x))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// report sets the bytes per op and adds ns/id and ids/s.
func report(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/id")
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mids/s")
}

// benchHashes also reports cpu-ns/id, the CPU of the benchmark's thread
// (locked to it) per id, which a loaded machine inflates far less than the
// wall time of ns/id.
func benchHashes(b *testing.B, body []byte, parse func([]uint64, []byte) ([]uint64, error)) {
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	dst := make([]uint64, 0, benchIDs)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := threadCPU(b)
	for b.Loop() {
		var err error
		if dst, err = parse(dst[:0], body); err != nil || len(dst) != benchIDs {
			b.Fatalf("parse: %d ids, %v", len(dst), err)
		}
	}
	b.ReportMetric(float64((threadCPU(b)-t0).Nanoseconds())/float64(b.N)/benchIDs, "cpu-ns/id")
	report(b, benchIDs)
}

func threadCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // RUSAGE_THREAD
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkJSONInts(b *testing.B) {
	ints := benchInts()
	body := jsonBody(b, "ids", ints, false)
	b.Run("ingest", func(b *testing.B) {
		benchHashes(b, body, func(d []uint64, body []byte) ([]uint64, error) { return AppendJSONHashes(d, body, benchIDs) })
	})
	uniform := jsonBody(b, "ids", uniformInts(), false)
	b.Run("ingest_uniform1e8", func(b *testing.B) {
		benchHashes(b, uniform, func(d []uint64, body []byte) ([]uint64, error) { return AppendJSONHashes(d, body, benchIDs) })
	})
	for _, w := range []struct {
		name string
		v    []int64
	}{{"int64", int64Ints()}, {"negative", negativeInts()}} {
		wb := jsonBody(b, "ids", w.v, false)
		b.Run("ingest_"+w.name, func(b *testing.B) {
			benchHashes(b, wb, func(d []uint64, body []byte) ([]uint64, error) { return AppendJSONHashes(d, body, benchIDs) })
		})
		b.Run("encoding_json_Number_"+w.name, func(b *testing.B) {
			benchHashes(b, wb, stdNumberHashes)
		})
		b.Run("hash_only_"+w.name, func(b *testing.B) { benchHashOnly(b, wb, w.v) })
	}
	pretty := jsonBody(b, "ids", ints, true)
	b.Run("ingest_indented", func(b *testing.B) {
		benchHashes(b, pretty, func(d []uint64, body []byte) ([]uint64, error) { return AppendJSONHashes(d, body, benchIDs) })
	})
	b.Run("encoding_json_Number", func(b *testing.B) {
		benchHashes(b, body, stdNumberHashes)
	})
	b.Run("encoding_json_any", func(b *testing.B) {
		benchHashes(b, body, stdAnyHashes)
	})
	b.Run("hash_only", func(b *testing.B) { benchHashOnly(b, body, ints) })
}

// benchHashOnly hashes ids one at a time, the floor under parsing them.
func benchHashOnly(b *testing.B, body []byte, ids []int64) {
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	dst := make([]uint64, 0, benchIDs)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := threadCPU(b)
	for b.Loop() {
		dst = dst[:0]
		for _, v := range ids {
			h, _ := murmur.Int64(v, 0)
			dst = append(dst, h)
		}
	}
	b.ReportMetric(float64((threadCPU(b)-t0).Nanoseconds())/float64(b.N)/benchIDs, "cpu-ns/id")
	report(b, benchIDs)
}

// int64Ints are 64-bit user ids (snowflake-like): uniform over the
// non-negative int64 range, so nearly all have 18 or 19 digits.
func int64Ints() []int64 {
	r := rand.New(rand.NewPCG(7, 8))
	v := make([]int64, benchIDs)
	for i := range v {
		v[i] = int64(r.Uint64() >> 1)
	}
	return v
}

// negativeInts are negative ids of every width: a negative int64 shifted
// right by 0 to 62 bits, so widths from 1 to 19 digits are about equally
// common, down to -9223372036854775808.
func negativeInts() []int64 {
	r := rand.New(rand.NewPCG(9, 10))
	v := make([]int64, benchIDs)
	for i := range v {
		v[i] = int64(r.Uint64()|1<<63) >> r.IntN(63)
	}
	v[0] = math.MinInt64
	return v
}

func BenchmarkJSONTexts(b *testing.B) {
	texts := benchTexts()
	body := jsonBody(b, "ids", texts, false)
	b.Run("ingest", func(b *testing.B) {
		benchHashes(b, body, func(d []uint64, body []byte) ([]uint64, error) { return AppendJSONHashes(d, body, benchIDs) })
	})
	uuids := uuidTexts()
	ubody := jsonBody(b, "ids", uuids, false)
	b.Run("ingest_uuid", func(b *testing.B) {
		benchHashes(b, ubody, func(d []uint64, body []byte) ([]uint64, error) { return AppendJSONHashes(d, body, benchIDs) })
	})
	b.Run("hash_only_uuid", func(b *testing.B) {
		benchHashes(b, ubody, func(d []uint64, _ []byte) ([]uint64, error) {
			for _, s := range uuids {
				h, _ := murmur.String(s, 0)
				d = append(d, h)
			}
			return d, nil
		})
	})
	b.Run("encoding_json_string", func(b *testing.B) {
		benchHashes(b, body, func(d []uint64, body []byte) ([]uint64, error) {
			var v struct {
				IDs []string `json:"ids"`
			}
			if err := json.Unmarshal(body, &v); err != nil {
				return d, err
			}
			for _, s := range v.IDs {
				h, _ := murmur.String(s, 0)
				d = append(d, h)
			}
			return d, nil
		})
	})
	b.Run("encoding_json_any", func(b *testing.B) {
		benchHashes(b, body, stdAnyHashes)
	})
	b.Run("hash_only", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		dst := make([]uint64, 0, benchIDs)
		for b.Loop() {
			dst = dst[:0]
			for _, s := range texts {
				h, _ := murmur.String(s, 0)
				dst = append(dst, h)
			}
		}
		report(b, benchIDs)
	})
}

// stdNumberHashes is the encoding/json peer for ints: decode into
// []json.Number, then parse and hash as the service must.
func stdNumberHashes(d []uint64, body []byte) ([]uint64, error) {
	var v struct {
		IDs []json.Number `json:"ids"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return d, err
	}
	for _, n := range v.IDs {
		x, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return d, err
		}
		h, _ := murmur.Int64(x, 0)
		d = append(d, h)
	}
	return d, nil
}

// stdAnyHashes is the encoding/json peer for mixed ids: decode into []any
// with UseNumber and unknown fields refused, then parse and hash.
func stdAnyHashes(d []uint64, body []byte) ([]uint64, error) {
	var v struct {
		IDs []any `json:"ids"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return d, err
	}
	for _, x := range v.IDs {
		var h uint64
		switch x := x.(type) {
		case json.Number:
			n, err := strconv.ParseInt(string(x), 10, 64)
			if err != nil {
				return d, err
			}
			h, _ = murmur.Int64(n, 0)
		case string:
			h, _ = murmur.String(x, 0)
		default:
			return d, fmt.Errorf("bad id %v", x)
		}
		d = append(d, h)
	}
	return d, nil
}

func BenchmarkLines(b *testing.B) {
	ints, texts := benchInts(), benchTexts()
	for _, tt := range []struct {
		name string
		f    LineFormat
		body []byte
	}{
		{"ndjson_ints", NDJSON, lineBody(ints, func(v int64) string { return strconv.FormatInt(v, 10) })},
		{"ndjson_texts", NDJSON, lineBody(texts, strconv.Quote)},
		{"ndjson_int64", NDJSON, lineBody(int64Ints(), func(v int64) string { return strconv.FormatInt(v, 10) })},
		{"text_ints", TextInts, lineBody(ints, func(v int64) string { return strconv.FormatInt(v, 10) })},
		{"text_int64", TextInts, lineBody(int64Ints(), func(v int64) string { return strconv.FormatInt(v, 10) })},
		{"text_int64_crlf", TextInts, lineBody(int64Ints(), func(v int64) string { return strconv.FormatInt(v, 10) + "\r" })},
		{"text_texts", TextTexts, lineBody(texts, func(s string) string { return s })},
	} {
		b.Run(tt.name, func(b *testing.B) {
			benchHashes(b, tt.body, func(d []uint64, body []byte) ([]uint64, error) {
				return AppendLineHashes(d, body, tt.f, benchIDs)
			})
		})
	}
}

func BenchmarkOctet(b *testing.B) {
	var body []byte
	for _, v := range benchInts() {
		body = binary.BigEndian.AppendUint64(body, uint64(v))
	}
	b.Run("ingest", func(b *testing.B) {
		benchHashes(b, body, func(d []uint64, body []byte) ([]uint64, error) { return AppendOctetHashes(d, body, benchIDs) })
	})
}

func BenchmarkJSONItems(b *testing.B) {
	ints, texts := benchInts(), benchTexts()
	items := make([]map[string]any, benchIDs)
	for i := range items {
		var id any = ints[i]
		if i%2 == 1 {
			id = texts[i]
		}
		items[i] = map[string]any{"id": id, "count": i%7 + 1}
	}
	for _, tt := range []struct {
		name string
		body []byte
	}{
		{"ids_ints", jsonBody(b, "ids", ints, false)},
		{"ids_texts", jsonBody(b, "ids", texts, false)},
		{"items_mixed", jsonBody(b, "items", items, false)},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tt.body)))
			dst := make([]Item, 0, benchIDs)
			for b.Loop() {
				var err error
				if dst, err = AppendJSONItems(dst[:0], tt.body, benchIDs); err != nil || len(dst) != benchIDs {
					b.Fatalf("parse: %d items, %v", len(dst), err)
				}
			}
			report(b, benchIDs)
		})
	}
}

// uniformInts are ids drawn uniformly below 10^8, as the load generator
// draws them: almost all have 7 or 8 digits.
func uniformInts() []int64 {
	r := rand.New(rand.NewPCG(5, 6))
	v := make([]int64, benchIDs)
	for i := range v {
		v[i] = int64(r.IntN(100_000_000))
	}
	return v
}

// BenchmarkParseInt compares the eight-digit parser with a byte-at-a-time
// one over the same tokens, for the mixed ids and for uniform ones.
func BenchmarkParseInt(b *testing.B) {
	for _, ids := range []struct {
		name string
		v    []int64
	}{{"mixed", benchInts()}, {"uniform1e8", uniformInts()}} {
		b.Run("ids="+ids.name, func(b *testing.B) { benchParseInt(b, ids.v) })
	}
}

func benchParseInt(b *testing.B, ids []int64) {
	body := jsonBody(b, "ids", ids, false)
	var starts []int
	for i := 8; i < len(body); i++ {
		if body[i-1] == '[' || body[i-1] == ',' {
			starts = append(starts, i)
		}
	}
	for _, p := range []struct {
		name string
		f    func([]byte, int) (int64, int, bool)
	}{{"swar", parseInt}, {"scalar", scalarParseInt}} {
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			var sum int64
			for b.Loop() {
				for _, s := range starts {
					v, _, _ := p.f(body, s)
					sum += v
				}
			}
			report(b, len(starts))
			if sum == 1 {
				b.Log(sum)
			}
		})
	}
}

// BenchmarkIntKernels parses the same JSON bodies of integer ids through
// each kernel this machine runs (the word loops, AVX2, AVX-512), one
// sub-benchmark each, hash included: ids below 10^8, 64-bit ids,
// negative ids of every width, and ids below 10^7 mixed half and half
// with random int64s. cpu-ns/id is the thread's CPU.
func BenchmarkIntKernels(b *testing.B) {
	for _, w := range []struct {
		name string
		v    []int64
	}{{"uniform1e8", uniformInts()}, {"int64", int64Ints()}, {"negative", negativeInts()}, {"mixed", benchInts()}} {
		body := jsonBody(b, "ids", w.v, false)
		for _, k := range intKernels(b) {
			b.Run(w.name+"/"+k.String(), func(b *testing.B) {
				withIntKernel(k, func() (any, error) {
					benchHashes(b, body, func(d []uint64, body []byte) ([]uint64, error) { return AppendJSONHashes(d, body, benchIDs) })
					return nil, nil
				})
			})
		}
	}
}
