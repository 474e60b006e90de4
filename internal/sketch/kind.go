package sketch

import (
	"slices"

	"github.com/sketchd/sketchd/internal/cms"
)

// Kind is one sketch kind as the rest of sketchd sees it: everything the
// store and the server need to create, decode, encode, merge, update and
// describe its sketches without knowing what they are. Each kind is
// registered once, in the registry below; code that routes by kind asks
// the registry (Lookup, ByTag, DetectUpload), and an unknown kind is an
// error, never a default.
type Kind struct {
	// Type is the kind's name in the API ("hll").
	Type Type
	// Format names the kind's encoding for people ("the postgresql-hll
	// storage format"), as upload errors show it.
	Format string
	// Tag identifies the kind in stored records and log operations. Tags
	// are never reused: a stored record outlives any one binary.
	Tag byte
	// Default returns the parameters of a sketch created implicitly
	// (?create=true).
	Default func() Params
	// Decode parses the kind's encoding (its raw download format) as
	// strictly as the engine allows. Its errors wrap the engine's
	// sentinels; whoever knows where the bytes came from classifies them
	// (an upload's are Invalid, stored bytes' are Internal).
	Decode func(b []byte) (Sketch, error)
	// Check, for a kind that has one, reports what Decode would: its
	// error, or the parameters of the sketch it would return, doing less
	// (a FULL HLL's registers are not unpacked). nil means the kind has
	// none: Checked decodes.
	Check func(b []byte) (Params, error)
	// Sniff reports whether b looks like this kind's encoding, for
	// uploads that do not say their kind. At most one kind claims any b.
	Sniff func(b []byte) bool
	// Prepare reads a batch of ids in the form the kind adds them. It
	// needs no sketch, so the store calls it before taking any lock.
	Prepare func(in Input) (Batch, error)
	// Union returns a new sketch holding the union of sketches of this
	// kind (at least one), with the kind's rule for mixed parameters.
	Union func(ss []Sketch) (Sketch, error)
	// Representation reads the representation label (see
	// Sketch.Representation) from encoded bytes without decoding them
	// all; nil means the kind has none. Used to count stored sketches
	// cheaply at startup.
	Representation func(b []byte) (string, error)
	// Fresh, for a kind that records it, returns which of a batch's ids
	// were new once Apply added them: absent from the sketch before (a
	// Bloom filter's check-and-add). nil means the kind does not say.
	Fresh func(b Batch) []bool
}

// Params are a kind's creation parameters. Implementations are comparable
// values: two Params are the same parameters exactly when they are ==.
type Params interface {
	// Kind returns the kind the parameters belong to.
	Kind() *Kind
	// Validate checks the parameters; its errors are Invalid.
	Validate() error
	// New returns an empty sketch with these parameters.
	New() (Sketch, error)
	// String describes the parameters for messages ("log2m=14 ...").
	String() string
}

// Sketch is a decoded sketch of some registered kind. It is not safe for
// concurrent use: the store serialises writers and readers of one sketch.
// Methods that take another Sketch or a Batch expect one of the same
// kind, as the store guarantees.
type Sketch interface {
	// Kind returns the sketch's kind.
	Kind() *Kind
	// Params returns the parameters the sketch was built with.
	Params() Params
	// AppendBinary appends the sketch's encoding (Kind().Decode reads it).
	AppendBinary(b []byte) []byte
	// Clone returns a deep copy.
	Clone() Sketch
	// Merge unions o into the receiver, keeping the receiver's parameters.
	// On error (Conflict for parameters that cannot be merged) the
	// receiver is unchanged.
	Merge(o Sketch) error
	// Check reports whether Apply(b) would succeed, changing nothing: the
	// store checks every sketch of an all-or-nothing write first.
	Check(b Batch) error
	// Apply adds b and appends to delta what the log needs to replay the
	// change (ApplyDelta); it appends nothing when b changed nothing. It
	// fails, changing nothing, exactly when Check(b) fails.
	Apply(b Batch, delta []byte) ([]byte, error)
	// ApplyDelta replays a delta appended by Apply onto the state Apply
	// started from. It refuses a malformed delta, leaving the receiver
	// unchanged.
	ApplyDelta(delta []byte) error
	// Describe fills in the kind's fields of info: representation,
	// estimate and its error, totals, size.
	Describe(info *Info)
	// SizeBytes is the length of the encoding.
	SizeBytes() int
	// MemoryBytes approximates the heap the decoded sketch holds.
	MemoryBytes() int64
	// Representation labels the sketch's current representation for
	// metrics ("" for a kind that has none).
	Representation() string
	// Estimate is the number exported on /metrics for an opted-in sketch.
	Estimate() float64
}

// Absorb adds b to s like Apply, without recording what changed: for a
// sketch that only gathers a write's ids to be merged into another (the
// PostgreSQL backend's per-request delta). A kind whose Apply spends time
// on that record offers a cheaper path (an Absorb method); the others
// fall back to Apply.
func Absorb(s Sketch, b Batch) error {
	if a, ok := s.(interface{ Absorb(Batch) error }); ok {
		return a.Absorb(b)
	}
	_, err := s.Apply(b, nil)
	return err
}

// PrepareFor is k.Prepare(in), refusing an input that asks which of its
// ids were new (WantsFresh) for a kind that does not record it: a
// Conflict, before anything changed. Backends prepare adds with it.
func PrepareFor(k *Kind, in Input) (Batch, error) {
	if w, ok := in.(FreshInput); ok && w.WantsFresh() && k.Fresh == nil {
		return nil, Errorf(Conflict, "only bloom sketches say which ids were new; this is a %s sketch", k.Type)
	}
	return k.Prepare(in)
}

// FreshOf returns which of b's ids were new, once applied to a sketch of
// kind k (Kind.Fresh), or nil for a kind that does not say.
func FreshOf(k *Kind, b Batch) []bool {
	if k.Fresh == nil {
		return nil
	}
	return k.Fresh(b)
}

// FreshInput is an Input whose sender asks which of its ids were new
// (POST …/add?report=new): only a kind with Fresh takes it.
type FreshInput interface {
	Input
	WantsFresh() bool
}

// Batch is a batch of ids prepared by Kind.Prepare for one kind.
type Batch interface {
	// Len is the number of ids (or items) the batch adds: what an add
	// answers as accepted.
	Len() int
}

// Input is a batch of ids as a client sent it, parsed on demand in the
// form a kind needs. Errors are *Error (Invalid or TooLarge) describing
// the body. Slices returned are valid until the request that made the
// Input ends; the store does not keep them.
type Input interface {
	// Hashes returns the ids hashed as postgresql-hll hashes them, or
	// pre-hashed values as given.
	Hashes() ([]uint64, error)
	// Items returns the ids with their counts (1 each unless the body
	// gave counts).
	Items() ([]cms.Item, error)
	// Type is the kind a sketch created implicitly for this input gets:
	// a body of counted items makes a Count-Min, anything else an HLL.
	Type() Type
}

// registry lists every kind. Adding a kind means one more entry here,
// pointing at the kind's own file (kind_hll.go is the model).
var registry = [...]*Kind{&hllKind, &cmsKind, &thetaKind, &freqKind, &dshllKind, &cpcKind, &zetaKind, &airliftKind, &bloomKind, &kllDoublesKind, &kllLongsKind}

// Kinds returns every registered kind, in tag order.
func Kinds() []*Kind { return registry[:] }

// Lookup returns the kind named t; an unknown name is Invalid.
func Lookup(t Type) (*Kind, error) {
	for _, k := range registry {
		if k.Type == t {
			return k, nil
		}
	}
	return nil, Errorf(Invalid, "unknown sketch type %s; use %s", quote(string(t)), typeList())
}

// LookupFor returns the kind of API type t that encoded b: the one whose
// Sniff claims b among the kinds of type t (a kll sketch of doubles or
// of longs), else the first of them. For a backend that records only the
// type beside the bytes.
func LookupFor(t Type, b []byte) (*Kind, error) {
	first, err := Lookup(t)
	if err != nil {
		return nil, err
	}
	for _, k := range registry {
		if k.Type == t && k.Sniff(b) {
			return k, nil
		}
	}
	return first, nil
}

// ByTag returns the kind stored under tag, or an error naming it.
func ByTag(tag byte) (*Kind, error) {
	for _, k := range registry {
		if k.Tag == tag {
			return k, nil
		}
	}
	return nil, Errorf(Internal, "unknown sketch kind tag %d", tag)
}

// WrongKind is the Conflict of an operation on a sketch of another kind.
func WrongKind(name string, have, want Type) error {
	return Errorf(Conflict, "sketch %s is a %s sketch, not %s", quote(name), have, want)
}

// NeedKind returns nil when s is of kind want, else WrongKind.
func NeedKind(name string, s Sketch, want Type) error {
	if have := s.Kind().Type; have != want {
		return WrongKind(name, have, want)
	}
	return nil
}

// SameKind checks that every sketch is of the first one's kind: mixing
// kinds in one union or intersection is a Conflict naming the pair.
func SameKind(names []string, ss []Sketch) error {
	for i, s := range ss[1:] {
		if s.Kind() != ss[0].Kind() {
			// Kinds of one API type (kll of doubles and of longs) differ
			// in their parameters.
			a, b := string(ss[0].Kind().Type), string(s.Kind().Type)
			if a == b {
				a, b = ss[0].Params().String(), s.Params().String()
			}
			return Errorf(Conflict, "cannot combine %s sketch %s with %s sketch %s", a, quote(names[0]), b, quote(names[i+1]))
		}
	}
	return nil
}

func typeList() string {
	var types []Type
	for _, k := range registry {
		if !slices.Contains(types, k.Type) {
			types = append(types, k.Type)
		}
	}
	s := ""
	for i, t := range types {
		switch {
		case i == 0:
		case i == len(types)-1:
			s += " or "
		default:
			s += ", "
		}
		s += string(t)
	}
	return s
}

// trimKindPrefix drops an engine's "pkg: " prefix (a lower-case word and
// a colon) from an error text, for client-facing details.
func trimKindPrefix(s string) string {
	for i := 0; i < len(s) && i < 16; i++ {
		c := s[i]
		if c == ':' && i > 0 && i+1 < len(s) && s[i+1] == ' ' {
			return s[i+2:]
		}
		if c < 'a' || c > 'z' {
			return s
		}
	}
	return s
}

// Prefixed returns err with prefix added to its client-safe detail,
// keeping its kind (an unclassified err stays Internal).
func Prefixed(err error, prefix string) error {
	if e, ok := err.(*Error); ok {
		return &Error{Kind: e.Kind, Detail: prefix + e.Detail, Err: e.Err}
	}
	return err
}

// MergedInto returns a new sketch: cur (the stored sketch name) with sk
// unioned into it, keeping cur's parameters; the Merge of the store
// contract on every backend. Another kind, or parameters that cannot be
// merged, is a Conflict naming name.
func MergedInto(name string, cur, sk Sketch) (Sketch, error) {
	if err := NeedKind(name, cur, sk.Kind().Type); err != nil {
		return nil, err
	}
	merged := cur.Clone()
	if err := merged.Merge(sk); err != nil {
		return nil, Prefixed(err, "cannot union into "+quote(name)+": ")
	}
	return merged, nil
}

// Checked reports whether b decodes as a sketch of kind k (Decode's
// error), and its parameters, with the kind's Check where it has one.
// It keeps nothing of b.
func (k *Kind) Checked(b []byte) (Params, error) {
	if k.Check != nil {
		return k.Check(b)
	}
	sk, err := k.Decode(b)
	if err != nil {
		return nil, err
	}
	return sk.Params(), nil
}
