package sketch

import (
	"encoding/json"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
)

// Type is a sketch's type as the API names it.
type Type string

// The sketch types.
const (
	TypeHLL Type = "hll"
	TypeCMS Type = "cms"
)

// Spec is what a sketch is created with: its kind's parameters and
// whether its estimate is exported on /metrics. Two specs with the same
// parameters describe the same sketch whatever their Metric flag, which
// can be changed later.
type Spec struct {
	Params Params
	Metric bool
	// Expiry is when the sketch expires (zero: never).
	Expiry Expiry
}

// Type is the spec's sketch type ("" when it has no parameters).
func (s Spec) Type() Type {
	if s.Params == nil {
		return ""
	}
	return s.Params.Kind().Type
}

// SameParams reports whether s and o have the same kind and parameters.
func (s Spec) SameParams(o Spec) bool { return s.Params == o.Params }

// Validate checks the parameters; errors are Invalid.
func (s Spec) Validate() error {
	if s.Params == nil {
		return Errorf(Invalid, "a sketch needs a type; use %s", typeList())
	}
	return s.Params.Validate()
}

// New returns an empty sketch of the spec.
func (s Spec) New() (Sketch, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s.Params.New()
}

// Info describes a stored sketch: its spec, its state and its estimate.
type Info struct {
	Name string
	Spec Spec
	// Representation is the HLL storage type (EMPTY, EXPLICIT, SPARSE,
	// FULL); empty for CMS.
	Representation string
	// Cardinality and StdError (relative) are the HLL estimate and its
	// standard error.
	Cardinality, StdError float64
	// Total is the sum of all counts added to a CMS, the estimated
	// impressions of a frequency sketch, or the values added to a
	// zeta_hll sketch (its num_values).
	Total int64
	// ValueType is the type of ids a zeta_hll sketch counts: int64,
	// string, or unknown before the first.
	ValueType string
	// Lower and Upper bound the cardinality at two standard deviations
	// (about 95%) for kinds that compute bounds (theta, freq); Theta is
	// their sampling rate and Retained the hashes they keep.
	Lower, Upper float64
	Theta        float64
	Retained     int
	// Min, Max (nil while empty; a long exactly) and RankError
	// (normalized, single-sided; RankErrorPMF double-sided) describe a
	// KLL sketch, whose Total is the number of values and Retained the
	// items it keeps.
	Min, Max                *Value
	RankError, RankErrorPMF float64
	// BitsSet and FalsePositiveRate describe a Bloom filter: the bits set
	// and the current rate; its Cardinality is the estimated items.
	BitsSet           int
	FalsePositiveRate float64
	// SizeBytes is the length of the sketch's encoding.
	SizeBytes int
	CreatedAt time.Time
	UpdatedAt time.Time
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Event is one id to add to several sketches and series at once (POST
// /v1/events): counted once in each CMS, added to each HLL; in each series
// to the buckets its stamp falls in.
//
// The series are apart, behind a pointer events may share: most events
// name sketches only, and a request holds tens of thousands of events
// while it is written (64 bytes each, where series and stamp inline made
// 104).
type Event struct {
	ID       cms.ID
	Sketches []string
	Series   *EventSeries // nil: no series
}

// EventSeries is the series an event names and its stamp.
type EventSeries struct {
	Names []string
	TS    time.Time // zero: the time of the write
}

// SeriesNames returns the names of the series the event names, nil if
// none.
func (e *Event) SeriesNames() []string {
	if e.Series == nil {
		return nil
	}
	return e.Series.Names
}

// Stamp returns the event's stamp for its series: zero when it has none
// (the time of the write).
func (e *Event) Stamp() time.Time {
	if e.Series == nil {
		return time.Time{}
	}
	return e.Series.TS
}

// Added is what an add applied: the kind of the sketch it went to and how
// many ids (or items) it accepted.
type Added struct {
	Type     Type
	Accepted int
	// Fresh, for a kind that records it (Kind.Fresh), says of each id in
	// order whether it was new: absent before this write added it.
	Fresh []bool
}

// IDs returns the Input of ids given one by one (an event's id), each
// counted once.
func IDs(ids []cms.ID) Input { return idsInput(ids) }

type idsInput []cms.ID

func (in idsInput) Hashes() ([]uint64, error) {
	hs := make([]uint64, len(in))
	for i, id := range in {
		hs[i] = hashID(id)
	}
	return hs, nil
}

func (in idsInput) Items() ([]cms.Item, error) {
	its := make([]cms.Item, len(in))
	for i, id := range in {
		its[i] = cms.Item{ID: id, Count: 1}
	}
	return its, nil
}

func (in idsInput) Type() Type { return TypeHLL }
