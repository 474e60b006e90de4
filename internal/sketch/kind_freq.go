package sketch

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sketchd/sketchd/internal/freq"
)

// TypeFreq sketches are DataSketches' tuple sketches with an integer
// count per retained user (summed on update and union), in its compact
// tuple format: reach and the frequency report (users and impressions per
// frequency class). Ids hash as for theta.
const TypeFreq Type = "freq"

var freqKind = Kind{
	Type:    TypeFreq,
	Format:  "a DataSketches tuple sketch with integer counts",
	Tag:     4,
	Default: func() Params { return FreqParams{freq.DefaultParams()} },
	Decode: func(b []byte) (Sketch, error) {
		f, err := freq.Decode(b)
		if err != nil {
			return nil, err
		}
		return freqSketch{f: f, orig: keepOriginal(b, f.SizeBytes(), f.AppendStored)}, nil
	},
	Sniff: freq.Sniff,
	Prepare: func(in Input) (Batch, error) {
		its, err := in.Items()
		if err != nil {
			return nil, err
		}
		b := make(freqBatch, 0, len(its))
		for _, it := range its {
			if h, ok := thetaHash(it.ID); ok {
				b = append(b, freqItem{h, uint32(min(it.Count, freq.MaxCount))})
			}
		}
		return b, nil
	},
	Union: func(ss []Sketch) (Sketch, error) {
		p := ss[0].(freqSketch).f.Params()
		for _, s := range ss[1:] {
			p.LgK = min(p.LgK, s.(freqSketch).f.Params().LgK)
		}
		u, err := freq.New(p)
		if err != nil {
			return nil, Wrap(Invalid, err, trimKindPrefix(err.Error()))
		}
		for _, s := range ss {
			u.Union(s.(freqSketch).f)
		}
		return freqSketch{f: u}, nil
	},
}

// FreqParams are a frequency sketch's parameters: lg_k.
type FreqParams struct{ freq.Params }

// Kind implements Params.
func (FreqParams) Kind() *Kind { return &freqKind }

// Validate implements Params.
func (p FreqParams) Validate() error {
	if err := p.Params.Validate(); err != nil {
		return Wrap(Invalid, err, "invalid freq parameters: "+trimKindPrefix(err.Error()))
	}
	return nil
}

// New implements Params.
func (p FreqParams) New() (Sketch, error) {
	f, err := freq.New(p.Params)
	if err != nil {
		return nil, Wrap(Invalid, err, "invalid freq parameters: "+trimKindPrefix(err.Error()))
	}
	return freqSketch{f: f}, nil
}

// String implements Params.
func (p FreqParams) String() string { return fmt.Sprintf("freq lg_k=%d", p.LgK) }

// FreqOf returns the engine sketch behind s, if s is a frequency sketch.
func FreqOf(s Sketch) (*freq.Sketch, bool) {
	f, ok := s.(freqSketch)
	return f.f, ok
}

// freqSketch is a frequency sketch; orig keeps the bytes it was decoded
// from (see original).
type freqSketch struct {
	f    *freq.Sketch
	orig *original
}

type freqItem struct {
	hash  uint64
	count uint32
}

// freqBatch is a frequency batch: DataSketches hashes with their counts.
type freqBatch []freqItem

func (b freqBatch) Len() int { return len(b) }

func (s freqSketch) Kind() *Kind            { return &freqKind }
func (s freqSketch) Params() Params         { return FreqParams{s.f.Params()} }
func (s freqSketch) Clone() Sketch          { return freqSketch{f: s.f.Clone(), orig: s.orig.clone()} }
func (s freqSketch) Merge(o Sketch) error   { s.f.Union(o.(freqSketch).f); s.orig.drop(); return nil }
func (s freqSketch) Check(Batch) error      { return nil }
func (s freqSketch) MemoryBytes() int64     { return int64(s.f.MemoryBytes()+len(s.orig.bytes())) + 128 }
func (s freqSketch) Representation() string { return "" }

// AppendBinary appends the bytes as uploaded while they are kept, else
// the 4-byte-summary form with lg_k in byte 4 (freq.AppendStored).
func (s freqSketch) AppendBinary(b []byte) []byte {
	if ob := s.orig.bytes(); ob != nil {
		return append(b, ob...)
	}
	return s.f.AppendStored(b)
}

func (s freqSketch) SizeBytes() int {
	if ob := s.orig.bytes(); ob != nil {
		return len(ob)
	}
	return s.f.SizeBytes()
}
func (s freqSketch) Estimate() float64 { return s.f.Estimate() }

// Apply logs every item (counts add, so each counts once on replay):
// uvarint n, then n times a big-endian uint64 hash and uint32 count.
func (s freqSketch) Apply(b Batch, delta []byte) ([]byte, error) {
	items := b.(freqBatch)
	if len(items) == 0 {
		return delta, nil
	}
	s.orig.drop()
	delta = binary.AppendUvarint(delta, uint64(len(items)))
	for _, it := range items {
		s.f.AddHash(it.hash, it.count)
		delta = binary.BigEndian.AppendUint64(delta, it.hash)
		delta = binary.BigEndian.AppendUint32(delta, it.count)
	}
	return delta, nil
}

func (s freqSketch) ApplyDelta(delta []byte) error {
	n, k := binary.Uvarint(delta)
	if k <= 0 || uint64(len(delta)-k)%12 != 0 || n != uint64(len(delta)-k)/12 {
		return fmt.Errorf("freq delta of %d bytes is malformed", len(delta))
	}
	for i := range int(n) {
		at := k + 12*i
		s.f.AddHash(binary.BigEndian.Uint64(delta[at:]), binary.BigEndian.Uint32(delta[at+8:]))
	}
	s.orig.drop()
	return nil
}

func (s freqSketch) Describe(in *Info) {
	in.Cardinality = s.f.Estimate()
	if r, err := s.f.FrequencyReport(2, 2); err == nil {
		in.Lower, in.Upper = r.Reach.Lower, r.Reach.Upper
		in.Total = int64(math.Round(r.Impressions.Estimate))
	}
	in.Theta = s.f.Theta()
	in.Retained = s.f.Retained()
	in.SizeBytes = s.SizeBytes()
}
