package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

// operand is one input of a union or an intersection: a sketch's name (a
// JSON string), a range of a series ({"series","from","to"}) or the union
// of every sketch whose name starts with a prefix ({"prefix"}).
type operand struct {
	Name   string  `json:"-"`
	Series string  `json:"series"`
	From   string  `json:"from"`
	To     string  `json:"to"`
	Prefix *string `json:"prefix"`
}

// maxPrefixSketches bounds the sketches one request's prefixes may
// match, together (docs/operations.md, "Limits").
const maxPrefixSketches = 1_000_000

// UnmarshalJSON reads a name or a series range; the strict decoder has
// already refused unknown and repeated keys.
func (o *operand) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`)) {
		return json.Unmarshal(b, &o.Name)
	}
	type plain operand
	return json.Unmarshal(b, (*plain)(o))
}

// rangeOf is a parsed series operand.
type rangeOf struct {
	series   string
	from, to time.Time
}

// label names the operand in answers: the sketch's name, or the series
// with its range.
func (o operand) label() string {
	switch {
	case o.Prefix != nil:
		return *o.Prefix + "*"
	case o.Series == "":
		return o.Name
	}
	return o.Series + "[" + o.From + "," + o.To + ")"
}

// checkPrefix validates a name prefix: empty (every sketch) or the start
// of a name.
func checkPrefix(field, p string) error {
	if p != "" && sketch.ValidateName(p) != nil {
		return sketch.Errorf(sketch.Invalid, "%s=%q is not the start of a sketch name (letters, digits and . _ : -, starting with a letter or digit)", field, clip(p))
	}
	return nil
}

// checkOperands validates 1..hi operands (lo..hi) and reports whether all
// are sketch names, and their names if so.
func checkOperands(field string, ops []operand, lo, hi int) (names []string, err error) {
	if len(ops) < lo || len(ops) > hi {
		return nil, sketch.Errorf(sketch.Invalid, "%s must name %d to %d sketches or series ranges; it names %d", field, lo, hi, len(ops))
	}
	all := true
	for i, o := range ops {
		switch {
		case o.Prefix != nil:
			all = false
			if o.Series != "" || o.From != "" || o.To != "" {
				return nil, sketch.Errorf(sketch.Invalid, "%s[%d] gives a prefix and a series range; give one", field, i)
			}
			if err := checkPrefix(fmt.Sprintf("%s[%d].prefix", field, i), *o.Prefix); err != nil {
				return nil, err
			}
		case o.Name != "":
			if err := sketch.ValidateName(o.Name); err != nil {
				return nil, sketch.Errorf(sketch.Invalid, "%s[%d]: %s", field, i, err.(*sketch.Error).Detail)
			}
		case o.Series != "":
			all = false
			if err := sketch.ValidateName(o.Series); err != nil {
				return nil, sketch.Errorf(sketch.Invalid, "%s[%d].series: %s", field, i, err.(*sketch.Error).Detail)
			}
			for k, v := range map[string]string{"from": o.From, "to": o.To} {
				if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
					return nil, sketch.Errorf(sketch.Invalid, "%s[%d].%s=%q is not an RFC 3339 time", field, i, k, clip(v))
				}
			}
		default:
			return nil, sketch.Errorf(sketch.Invalid, `%s[%d] is empty: give a sketch name, {"series":…,"from":…,"to":…} or {"prefix":…}`, field, i)
		}
	}
	if !all {
		return nil, nil
	}
	names = make([]string, len(ops))
	for i, o := range ops {
		names[i] = o.Name
	}
	return names, nil
}

// resolve reads every operand as a sketch the caller owns: sketches by
// name in one consistent view, each series range as the union of its
// buckets, each prefix as the union the store computes. It returns the
// warnings of the series ranges, prefixed with their labels.
func (s *Server) resolve(ctx context.Context, ops []operand) ([]sketch.Sketch, []string, error) {
	return s.resolveExcept(ctx, ops, "")
}

// resolveExcept is resolve with the sketch exclude left out of every
// prefix: the name a union is stored as.
func (s *Server) resolveExcept(ctx context.Context, ops []operand, exclude string) ([]sketch.Sketch, []string, error) {
	out := make([]sketch.Sketch, len(ops))
	var names []string
	var at []int
	budget := maxPrefixSketches
	for i, o := range ops {
		switch {
		case o.Prefix != nil:
			u, n, err := s.store.UnionPrefix(ctx, *o.Prefix, exclude, budget)
			if err != nil {
				return nil, nil, err
			}
			out[i], budget = u, budget-n
		case o.Series == "":
			names = append(names, o.Name)
			at = append(at, i)
		}
	}
	if len(names) > 0 {
		err := s.store.View(ctx, names, func(sks []sketch.Sketch) error {
			for j, sk := range sks {
				out[at[j]] = sk.Clone()
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	var warnings []string
	b := s.budget() // one for all the request's ranges
	for i, o := range ops {
		if o.Series == "" || o.Prefix != nil {
			continue
		}
		ss, err := s.seriesStore()
		if err != nil {
			return nil, nil, err
		}
		from, _ := time.Parse(time.RFC3339Nano, o.From)
		to, _ := time.Parse(time.RFC3339Nano, o.To)
		plan, u, err := s.rangeUnion(ctx, ss, o.Series, from, to, b, false)
		if err != nil {
			return nil, nil, err
		}
		for _, w := range plan.Warnings {
			warnings = append(warnings, o.label()+": "+w)
		}
		out[i] = u
	}
	return out, warnings, nil
}
