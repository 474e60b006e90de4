package sketch

import (
	"fmt"

	"github.com/sketchd/sketchd/internal/hll"
)

// registerSource is how an HLL-family kind joins the overlap
// (EstimateOverlap): its sketches give their registers at any precision
// from hll.MinLog2m to their own, as a sketch of that precision of the
// same ids would hold them, each value one plus the zeros counted in the
// hash's bits outside the index (1 to 63; 0 empty). Which bits are the
// index and which are counted differs by format, so only sketches of one
// kind combine; within a kind, a register at index j holds exactly the
// ids whose hashes give index j, which is what the replicates need.
type registerSource interface {
	// registerLog2m is the sketch's own precision: log2 of its registers.
	registerLog2m() int
	// registersAt returns the registers at log2m, which is at most
	// registerLog2m.
	registersAt(log2m int) ([]uint8, error)
}

func (s dshllSketch) registerLog2m() int                    { return s.d.Params().LgK }
func (s dshllSketch) registersAt(lg int) ([]uint8, error)   { return s.d.Registers(lg) }
func (s zetaSketch) registerLog2m() int                     { return s.z.Params().Precision }
func (s zetaSketch) registersAt(lg int) ([]uint8, error)    { return s.z.Registers(lg) }
func (s airliftSketch) registerLog2m() int                  { return s.a.Params().IndexBits }
func (s airliftSketch) registersAt(lg int) ([]uint8, error) { return s.a.Registers(lg) }

// familyRegwidth is the register width the estimator reads the family's
// registers at: every value fits 6 bits.
const familyRegwidth = 6

// familyRegisters refuses operands (of one kind) that are not of an
// HLL-family kind with registers.
func familyRegisters(labels []string, sks []Sketch) error {
	kind := sks[0].Kind()
	if _, ok := sks[0].(registerSource); !ok {
		if kind == &cpcKind {
			return Errorf(Conflict, "an overlap takes sketches of one kind with HLL registers (%s); %s is a cpc sketch, whose bit matrix gives no registers to measure the counts' errors on (POST /v1/intersect takes cpc sketches)", overlapKinds, quote(labels[0]))
		}
		return Errorf(Conflict, "an overlap takes sketches of one HLL-family kind (%s); %s is a %s sketch", overlapKinds, quote(labels[0]), kind.Type)
	}
	return nil
}

// overlapFamily counts the overlap of sketches of one HLL-family kind
// other than hll (with registers: familyRegisters), from their registers
// at the smallest precision (at most hll.MaxLog2m).
func overlapFamily(labels []string, sks []Sketch) (Overlap, error) {
	kind := sks[0].Kind()
	lg, most := hll.MaxLog2m, 0
	for _, s := range sks {
		own := s.(registerSource).registerLog2m()
		lg, most = min(lg, own), max(most, own)
	}
	regs := make([][]uint8, len(sks))
	for i, s := range sks {
		r, err := s.(registerSource).registersAt(lg)
		if err != nil {
			return Overlap{}, fmt.Errorf("sketch: registers of %q at %d: %w", labels[i], lg, err)
		}
		regs[i] = r
	}
	p := hll.Params{Log2m: lg, Regwidth: familyRegwidth}
	var warnings []string
	if most != lg {
		why := "to compare them"
		if most > hll.MaxLog2m && lg == hll.MaxLog2m {
			why = "the most an overlap compares"
		}
		warnings = append(warnings, fmt.Sprintf("the %s sketches were folded to %d registers (%s), so the error is that of %d registers", kind.Type, p.NumRegisters(), why, p.NumRegisters()))
	}
	return overlapRegisters(labels, regs, p, warnings), nil
}
