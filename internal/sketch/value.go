package sketch

import (
	"strconv"

	"github.com/sketchd/sketchd/internal/kll"
)

// Value is a value a KLL sketch keeps or is asked about: a double, or a
// long held as the int64 it is. A float64 holds every integer only up to
// 2^53, so a long is never carried as one: 2^53+1 and 2^63-1 stay what
// they are through every question and answer.
type Value struct {
	long bool
	i    int64
	f    float64
}

// Double is the value f of a sketch of doubles.
func Double(f float64) Value { return Value{f: f} }

// Long is the value i of a sketch of longs.
func Long(i int64) Value { return Value{long: true, i: i} }

// ValueOf is v as a Value of its item type.
func ValueOf[T kll.Item](v T) Value {
	switch x := any(v).(type) {
	case int64:
		return Long(x)
	case float64:
		return Double(x)
	}
	panic("sketch: unreachable item type")
}

// IsLong reports whether v is a long.
func (v Value) IsLong() bool { return v.long }

// Int64 is a long's value (a double's truncated toward zero).
func (v Value) Int64() int64 {
	if v.long {
		return v.i
	}
	return int64(v.f)
}

// Float64 is a double's value, or a long rounded to the nearest double:
// for what is a float anyway (a gauge on /metrics), never for an answer.
func (v Value) Float64() float64 {
	if v.long {
		return float64(v.i)
	}
	return v.f
}

// Less reports whether v is below o. Both must be of one item type (a
// long and a double compare as doubles).
func (v Value) Less(o Value) bool {
	if v.long && o.long {
		return v.i < o.i
	}
	return v.Float64() < o.Float64()
}

// String formats v: a long in decimal, exactly; a double as
// strconv.FormatFloat(f, 'g', -1, 64) does, the shortest that reads back.
func (v Value) String() string {
	if v.long {
		return strconv.FormatInt(v.i, 10)
	}
	return strconv.FormatFloat(v.f, 'g', -1, 64)
}

// item is v as an item of type T, or an Invalid error when v is of the
// other type (the server parses a query as the sketch's own type).
func item[T kll.Item](v Value) (T, error) {
	var z T
	switch p := any(&z).(type) {
	case *int64:
		if !v.long {
			return z, Errorf(Invalid, "%s is a double; this kll sketch keeps longs", v)
		}
		*p = v.i
	case *float64:
		if v.long {
			return z, Errorf(Invalid, "%s is a long; this kll sketch keeps doubles", v)
		}
		*p = v.f
	}
	return z, nil
}
