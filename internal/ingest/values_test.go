package ingest

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestJSONFloats(t *testing.T) {
	ok := map[string][]float64{
		`{"values":[1,-2.5,3e2,0,-0,1E-3,0.5e+1]}`:      {1, -2.5, 300, 0, 0, 0.001, 5},
		` { "values" : [ ] } `:                          nil,
		`{"values":[9007199254740993]}`:                 {9007199254740992},
		`{"values":[1.7976931348623157e308,-4.9e-324]}`: {math.MaxFloat64, -5e-324},
		"{\"values\":[\n1,\r\n2\t]}":                    {1, 2},
	}
	for body, want := range ok {
		got, err := AppendJSONFloats(nil, []byte(body), -1)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s = %v, %v; want %v", body, got, err, want)
		}
	}
	bad := []struct {
		body   string
		want   error
		detail string
	}{
		{`{"values":["1"]}`, ErrType, `values[0] at offset 11: a string is not a number`},
		{`{"values":[01]}`, ErrSyntax, "malformed number 01"},
		{`{"values":[1.]}`, ErrSyntax, "malformed number"},
		{`{"values":[.5]}`, ErrSyntax, "want a number"},
		{`{"values":[+1]}`, ErrSyntax, "want a number"},
		{`{"values":[1e400]}`, ErrRange, "1e400 is out of the float64 range"},
		{`{"values":[NaN]}`, ErrSyntax, "want a number"},
		{`{"values":[true]}`, ErrType, "true is not a number"},
		{`{"values":[null]}`, ErrType, "null is not a number"},
		{`{"values":[[1]]}`, ErrType, "an array is not a number"},
		{`{"values":[1,]}`, ErrSyntax, "trailing comma"},
		{`{"values":[1 2]}`, ErrSyntax, "want ',' or ']'"},
		{`{"values":[1x]}`, ErrSyntax, "malformed number 1x"},
		{`{"values":1}`, ErrType, `"values" must be an array`},
		{`{"ids":[1]}`, ErrField, `unknown field "ids", want {"values":[…]}`},
		{`{"values":[1],"values":[2]}`, ErrField, "duplicate field"},
		{`{"values":[1]} x`, ErrSyntax, "after the JSON object"},
		{`{"values":[1,2,3]}`, ErrTooMany, "more than 2 values"},
		{``, ErrSyntax, "empty body"},
	}
	for _, c := range bad {
		dst := []float64{42}
		got, err := AppendJSONFloats(dst, []byte(c.body), 2)
		var ie *Error
		if !errors.Is(err, c.want) || !errors.As(err, &ie) || !strings.Contains(ie.Detail(), c.detail) {
			t.Errorf("%s: %v, want %v saying %q", c.body, err, c.want, c.detail)
		}
		if !slices.Equal(got, []float64{42}) {
			t.Errorf("%s: dst changed to %v", c.body, got)
		}
	}
	// Random doubles round-trip through their shortest decimal form, as
	// encoding/json reads them.
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString(`{"values":[`)
	var want []float64
	for i := range 2000 {
		v := math.Float64frombits(r.Uint64())
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		want = append(want, v)
	}
	b.WriteString("]}")
	got, err := AppendJSONFloats(nil, []byte(b.String()), -1)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("random doubles: %v", err)
	}
}

func TestJSONLongs(t *testing.T) {
	got, err := AppendJSONLongs(nil, []byte(`{"values":[1,-9223372036854775808,9223372036854775807,0]}`), -1)
	if err != nil || !slices.Equal(got, []int64{1, math.MinInt64, math.MaxInt64, 0}) {
		t.Errorf("longs = %v, %v", got, err)
	}
	for body, want := range map[string]error{
		`{"values":[1.5]}`:                 ErrType,
		`{"values":[1e3]}`:                 ErrType,
		`{"values":[9223372036854775808]}`: ErrRange,
		`{"values":["1"]}`:                 ErrType,
		`{"values":[1x]}`:                  ErrSyntax,
	} {
		if _, err := AppendJSONLongs(nil, []byte(body), -1); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", body, err, want)
		}
	}
}

func TestLineValues(t *testing.T) {
	got, err := AppendLineFloats(nil, []byte(" 1.5 \n\n-2\r\n3e1"), true, -1)
	if err != nil || !slices.Equal(got, []float64{1.5, -2, 30}) {
		t.Errorf("ndjson = %v, %v", got, err)
	}
	got, err = AppendLineFloats(nil, []byte("1.5\r\n\n2\n"), false, -1)
	if err != nil || !slices.Equal(got, []float64{1.5, 2}) {
		t.Errorf("text = %v, %v", got, err)
	}
	longs, err := AppendLineLongs(nil, []byte("7\n-8\n"), false, -1)
	if err != nil || !slices.Equal(longs, []int64{7, -8}) {
		t.Errorf("text longs = %v, %v", longs, err)
	}
	for _, c := range []struct {
		body   string
		ndjson bool
		want   error
		detail string
	}{
		{"1\n 2\n", false, ErrSyntax, "line 2 at offset 2"},
		{"1\n2 \n", false, ErrSyntax, "want the end of the line"},
		{"1\nabc\n", true, ErrSyntax, "line 2"},
		{"\"1\"\n", true, ErrType, "a string is not a number"},
		{"1\n2\n3\n", true, ErrTooMany, "line 3"},
		{"\xef\xbb\xbf1\n", true, ErrSyntax, "byte order mark"},
		{"1e999\n", false, ErrRange, "out of the float64 range"},
	} {
		_, err := AppendLineFloats(nil, []byte(c.body), c.ndjson, 2)
		var ie *Error
		if !errors.Is(err, c.want) || !errors.As(err, &ie) || !strings.Contains(ie.Detail(), c.detail) {
			t.Errorf("%q: %v, want %v saying %q", c.body, err, c.want, c.detail)
		}
	}
	if _, err := AppendLineLongs(nil, []byte("1.5\n"), false, -1); !errors.Is(err, ErrType) {
		t.Errorf("a float line into longs: %v", err)
	}
}

func TestOctetValues(t *testing.T) {
	be := binary.BigEndian.AppendUint64(nil, math.Float64bits(1.5))
	le := binary.LittleEndian.AppendUint64(nil, math.Float64bits(1.5))
	if got, err := AppendOctetFloats(nil, be, false, -1); err != nil || !slices.Equal(got, []float64{1.5}) {
		t.Errorf("big-endian = %v, %v", got, err)
	}
	if got, err := AppendOctetFloats(nil, le, true, -1); err != nil || !slices.Equal(got, []float64{1.5}) {
		t.Errorf("little-endian = %v, %v", got, err)
	}
	if got, err := AppendOctetLongs(nil, binary.LittleEndian.AppendUint64(nil, uint64(1<<63|5)), true, -1); err != nil || got[0] != math.MinInt64+5 {
		t.Errorf("little-endian long = %v, %v", got, err)
	}
	nan := binary.BigEndian.AppendUint64(append([]byte(nil), be...), math.Float64bits(math.NaN()))
	if _, err := AppendOctetFloats(nil, nan, false, -1); !errors.Is(err, ErrRange) || !strings.Contains(err.Error(), "values[1] at offset 8: NaN is not a finite number") {
		t.Errorf("NaN: %v", err)
	}
	if _, err := AppendOctetFloats(nil, be[:7], false, -1); !errors.Is(err, ErrSyntax) {
		t.Errorf("7 bytes: %v", err)
	}
	if _, err := AppendOctetLongs(nil, append(be, be...), false, 1); !errors.Is(err, ErrTooMany) {
		t.Errorf("too many: %v", err)
	}
}

// FuzzValues: no body panics any values parser; an error is an *Error
// wrapping one sentinel and leaves dst alone; a JSON body taken as doubles
// is read the same by encoding/json, and one taken as longs too.
func FuzzValues(f *testing.F) {
	for _, s := range []string{`{"values":[1,2.5,-3e-2]}`, `{"values":[]}`, `{"values":[1e400]}`, `{"values":[01]}`,
		"1\n2.5\n", " 3 \n\r\n", "\xef\xbb\xbf1", `{"values":[9223372036854775807]}`, "12345678abcdefgh"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(what string, n int, err error) {
			if err == nil {
				return
			}
			var ie *Error
			if !errors.As(err, &ie) || sentinelCount(err) != 1 {
				t.Fatalf("%s: error %v is not an *Error wrapping one sentinel", what, err)
			}
			if n != 1 {
				t.Fatalf("%s: dst changed on error", what)
			}
		}
		dst := []float64{7}
		fs, err := AppendJSONFloats(dst, b, 100)
		check("json floats", len(fs), err)
		if err == nil {
			var ref struct{ Values []float64 }
			if jerr := json.Unmarshal(b, &ref); jerr != nil || !slices.Equal(fs[1:], ref.Values) && !(len(ref.Values) == 0 && len(fs) == 1) {
				t.Fatalf("json floats %v, encoding/json %v, %v", fs[1:], ref.Values, jerr)
			}
		}
		ls, err := AppendJSONLongs([]int64{7}, b, 100)
		check("json longs", len(ls), err)
		if err == nil {
			var ref struct{ Values []int64 }
			if jerr := json.Unmarshal(b, &ref); jerr != nil || !slices.Equal(ls[1:], ref.Values) && !(len(ref.Values) == 0 && len(ls) == 1) {
				t.Fatalf("json longs %v, encoding/json %v, %v", ls[1:], ref.Values, jerr)
			}
		}
		for _, nd := range []bool{false, true} {
			fs, err := AppendLineFloats([]float64{7}, b, nd, 100)
			check("line floats", len(fs), err)
			ls, err := AppendLineLongs([]int64{7}, b, nd, 100)
			check("line longs", len(ls), err)
			fs, err = AppendOctetFloats([]float64{7}, b, nd, 100)
			check("octet floats", len(fs), err)
			for _, v := range fs {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatal("a non-finite double was taken")
				}
			}
		}
	})
}

func sentinelCount(err error) int {
	n := 0
	for _, s := range []error{ErrSyntax, ErrType, ErrRange, ErrField, ErrTooMany} {
		if errors.Is(err, s) {
			n++
		}
	}
	return n
}
