package sketch

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
)

// Type is a sketch's type as the API names it.
type Type string

// The sketch types.
const (
	TypeHLL Type = "hll"
	TypeCMS Type = "cms"
)

// Spec is what a sketch is created with: its type and parameters (HLL for
// TypeHLL, CMS for TypeCMS) and whether its estimate is exported on
// /metrics. Two specs with the same Type and parameters describe the same
// sketch whatever their Metric flag, which can be changed later.
type Spec struct {
	Type   Type
	HLL    hll.Params
	CMS    cms.Params
	Metric bool
}

// DefaultHLL returns the spec of a sketch created implicitly (?create=true).
func DefaultHLL() Spec { return Spec{Type: TypeHLL, HLL: hll.DefaultParams()} }

// SameParams reports whether s and o have the same type and parameters.
func (s Spec) SameParams(o Spec) bool {
	if s.Type != o.Type {
		return false
	}
	if s.Type == TypeHLL {
		return s.HLL == o.HLL
	}
	return s.CMS == o.CMS
}

// Validate checks the parameters of the spec's type; errors are Invalid.
func (s Spec) Validate() error {
	switch s.Type {
	case TypeHLL:
		if err := s.HLL.Validate(); err != nil {
			return Wrap(Invalid, err, "invalid hll parameters: "+trimPrefix(err.Error(), "hll: "))
		}
	case TypeCMS:
		if err := s.CMS.Validate(); err != nil {
			return Wrap(Invalid, err, "invalid cms parameters: "+trimPrefix(err.Error(), "cms: "))
		}
	default:
		return Errorf(Invalid, "unknown sketch type %s; use hll or cms", quote(string(s.Type)))
	}
	return nil
}

// ParamsString describes the parameters for conflict messages.
func (s Spec) ParamsString() string {
	if s.Type == TypeHLL {
		return "hll " + s.HLL.String()
	}
	return fmt.Sprintf("cms width=%d depth=%d conservative=%t topk=%d", s.CMS.Width, s.CMS.Depth, s.CMS.Conservative, s.CMS.TopK)
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
	// Total is the sum of all counts added to a CMS.
	Total int64
	// SizeBytes is the length of the sketch's encoding.
	SizeBytes int
	CreatedAt time.Time
	UpdatedAt time.Time
}

func trimPrefix(s, p string) string {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Event is one id to add to several sketches at once (POST /v1/events):
// counted once in each CMS, added to each HLL.
type Event struct {
	ID       cms.ID
	Sketches []string
}
