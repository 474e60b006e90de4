package sketch

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sketchd/sketchd/internal/cms"
)

// cmsMagic is the first byte of every Count-Min encoding (cms doc.go):
// format version 1, or 2 for a sketch over a value domain.
const (
	cmsMagic       = 0xC1
	cmsMagicRanged = 0xC2
)

// TypeCMS sketches are Count-Min sketches in sketchd's own format.
var cmsKind = Kind{
	Type:    TypeCMS,
	Format:  "sketchd's Count-Min format",
	Tag:     2,
	Default: func() Params { return CMSParams{cms.DefaultParams()} },
	Decode: func(b []byte) (Sketch, error) {
		// The decoded sketch may keep text ids: give it bytes of its own.
		c, err := cms.Decode(append([]byte(nil), b...))
		if err != nil {
			return nil, err
		}
		return cmsSketch{c}, nil
	},
	Sniff:   func(b []byte) bool { return len(b) > 0 && (b[0] == cmsMagic || b[0] == cmsMagicRanged) },
	Prepare: func(in Input) (Batch, error) { its, err := in.Items(); return itemBatch(its), err },
	Union: func(ss []Sketch) (Sketch, error) {
		c := ss[0].(cmsSketch).c.Clone()
		for _, s := range ss[1:] {
			if err := c.Union(s.(cmsSketch).c); err != nil {
				return nil, cmsError(err)
			}
		}
		return cmsSketch{c}, nil
	},
}

// CMSParams are a Count-Min sketch's parameters.
type CMSParams struct{ cms.Params }

// Kind implements Params.
func (CMSParams) Kind() *Kind { return &cmsKind }

// Validate implements Params.
func (p CMSParams) Validate() error {
	if err := p.Params.Validate(); err != nil {
		return Wrap(Invalid, err, "invalid cms parameters: "+trimKindPrefix(err.Error()))
	}
	return nil
}

// New implements Params.
func (p CMSParams) New() (Sketch, error) {
	c, err := cms.New(p.Params)
	if err != nil {
		return nil, Wrap(Invalid, err, "invalid cms parameters: "+trimKindPrefix(err.Error()))
	}
	return cmsSketch{c}, nil
}

// String implements Params.
func (p CMSParams) String() string {
	if p.DomainBits > 0 {
		return fmt.Sprintf("cms width=%d depth=%d conservative=%t topk=%d domain_bits=%d", p.Width, p.Depth, p.Conservative, p.TopK, p.DomainBits)
	}
	return fmt.Sprintf("cms width=%d depth=%d conservative=%t topk=%d", p.Width, p.Depth, p.Conservative, p.TopK)
}

// NewCMS wraps a Count-Min engine sketch; the Sketch owns c from then on.
func NewCMS(c *cms.Sketch) Sketch { return cmsSketch{c} }

// CMSOf returns the engine sketch behind s, if s is a Count-Min. Callers
// must not keep or change it beyond what the store allows for s.
func CMSOf(s Sketch) (*cms.Sketch, bool) {
	c, ok := s.(cmsSketch)
	return c.c, ok
}

type cmsSketch struct{ c *cms.Sketch }

// itemBatch is a Count-Min batch: ids with counts.
type itemBatch []cms.Item

func (b itemBatch) Len() int { return len(b) }

// cmsError classifies a Count-Min engine error: a total that would
// overflow or shapes that cannot be merged contradict the stored sketch
// (Conflict); anything else is bad input.
func cmsError(err error) error {
	if errors.Is(err, cms.ErrOverflow) || errors.Is(err, cms.ErrIncompatible) {
		return Wrap(Conflict, err, trimKindPrefix(err.Error()))
	}
	return Wrap(Invalid, err, trimKindPrefix(err.Error()))
}

func (s cmsSketch) Kind() *Kind    { return &cmsKind }
func (s cmsSketch) Params() Params { return CMSParams{s.c.Params()} }
func (s cmsSketch) AppendBinary(b []byte) []byte {
	b, _ = s.c.AppendBinary(b)
	return b
}
func (s cmsSketch) Clone() Sketch { return cmsSketch{s.c.Clone()} }

func (s cmsSketch) Merge(o Sketch) error {
	if err := s.c.Union(o.(cmsSketch).c); err != nil {
		return cmsError(err)
	}
	return nil
}

// Check validates every item and the new total, as AddBatch would.
func (s cmsSketch) Check(b Batch) error {
	var sum uint64
	for i, it := range b.(itemBatch) {
		if it.Count == 0 {
			return Errorf(Invalid, "item %d: count 0", i)
		}
		if err := s.c.CheckID(it.ID); err != nil {
			return Wrap(Invalid, err, fmt.Sprintf("item %d: %s", i, trimKindPrefix(err.Error())))
		}
		if it.Count > 1<<63-1-sum {
			return Errorf(Conflict, "item %d: counts sum past %d", i, uint64(1<<63-1))
		}
		sum += it.Count
	}
	if err := s.c.CheckAdd(sum); err != nil {
		return cmsError(err)
	}
	return nil
}

// Apply logs the items themselves: uvarint n, then per item a kind byte
// (0 int, 1 text), the big-endian int or uvarint length and the text, and
// the uvarint count. Replay adds each exactly once.
func (s cmsSketch) Apply(b Batch, delta []byte) ([]byte, error) {
	items := b.(itemBatch)
	if len(items) == 0 {
		return delta, nil
	}
	if err := s.Check(b); err != nil {
		return delta, err
	}
	if err := s.c.AddBatch(items); err != nil {
		return delta, cmsError(err)
	}
	return AppendItems(delta, items), nil
}

func (s cmsSketch) ApplyDelta(delta []byte) error {
	items, n, err := ReadItems(delta)
	if err != nil {
		return err
	}
	if n != len(delta) {
		return fmt.Errorf("cms delta: %d bytes after the items", len(delta)-n)
	}
	return s.c.AddBatch(items)
}

func (s cmsSketch) Describe(in *Info) {
	in.Total = int64(s.c.Total())
	in.SizeBytes = s.c.SizeBytes()
}

func (s cmsSketch) SizeBytes() int         { return s.c.SizeBytes() }
func (s cmsSketch) MemoryBytes() int64     { return int64(s.c.SizeBytes()) + 128 }
func (s cmsSketch) Representation() string { return "" }
func (s cmsSketch) Estimate() float64      { return float64(s.c.Total()) }

// AppendItems appends items in the delta encoding Apply logs.
func AppendItems(b []byte, items []cms.Item) []byte {
	b = binary.AppendUvarint(b, uint64(len(items)))
	for _, it := range items {
		if it.ID.IsText() {
			b = append(b, 1)
			b = binary.AppendUvarint(b, uint64(len(it.ID.Text())))
			b = append(b, it.ID.Text()...)
		} else {
			b = append(b, 0)
			b = binary.BigEndian.AppendUint64(b, uint64(it.ID.Int()))
		}
		b = binary.AppendUvarint(b, it.Count)
	}
	return b
}

var errItemsTruncated = errors.New("cms delta: truncated")

// ReadItems reads what AppendItems wrote from the start of b and returns
// the items and the bytes read. Memory is bounded by len(b).
func ReadItems(b []byte) ([]cms.Item, int, error) {
	n, off := binary.Uvarint(b)
	if off <= 0 {
		return nil, 0, errItemsTruncated
	}
	// Every item takes at least 3 bytes.
	if n > uint64(len(b)-off)/3 {
		return nil, 0, fmt.Errorf("cms delta: %d items in %d bytes", n, len(b))
	}
	items := make([]cms.Item, n)
	for i := range items {
		if off >= len(b) {
			return nil, 0, errItemsTruncated
		}
		kind := b[off]
		off++
		switch kind {
		case 0:
			if len(b)-off < 8 {
				return nil, 0, errItemsTruncated
			}
			items[i].ID = cms.IntID(int64(binary.BigEndian.Uint64(b[off:])))
			off += 8
		case 1:
			l, k := binary.Uvarint(b[off:])
			if k <= 0 || l > uint64(len(b)-off-k) {
				return nil, 0, errItemsTruncated
			}
			off += k
			items[i].ID = cms.TextID(string(b[off : off+int(l)]))
			off += int(l)
		default:
			return nil, 0, fmt.Errorf("cms delta: unknown id kind %d", kind)
		}
		c, k := binary.Uvarint(b[off:])
		if k <= 0 {
			return nil, 0, errItemsTruncated
		}
		items[i].Count = c
		off += k
	}
	return items, off, nil
}
