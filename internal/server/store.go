package server

import (
	"context"
	"time"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// Store is what the server needs of a storage backend: named sketches,
// each of a kind registered in internal/sketch, which the backend keeps
// as opaque (kind, parameters, bytes) and asks the registry to decode,
// update and merge. internal/store/storetest is its conformance suite;
// every backend passes it.
//
// Errors. Every method fails with ctx's error if ctx is done before it
// changes anything. Errors a client can act on are *sketch.Error:
// NotFound for a sketch that does not exist; Conflict for an operation on
// a sketch of another kind or with other parameters, or a result that
// would contradict the stored state (a Count-Min total past 2^63−1);
// Invalid for input the kind refuses; TooLarge for input over a limit;
// Unavailable when the backend cannot take the write now (shutting down,
// its log or database failed, overloaded): the client may retry. Anything
// else is an internal error, logged and answered as a 500.
//
// Atomicity. Each write changes everything it names or nothing, and
// concurrent writes to one sketch are serialised: their result is the
// result of some order of them. Reads see a consistent state of the
// sketches they name.
//
// Durability. A write that returns nil is durable: it survives a crash of
// the process (kill -9) and, on a shared backend, is visible to every
// node. A write that returns an error may or may not have been applied
// only when the error is Unavailable or internal; every other error means
// nothing changed. Reads see every write that returned before they
// started (and may see one still being made durable).
//
// Idempotency keys. A write whose ctx carries an idem.Guard keeps the
// guard's key with its changes, in the same atomic, durable write, or
// changes nothing if the key is already kept (KeyStore says how).
type Store interface {
	// Create creates name with spec. If name exists with the same kind
	// and parameters, Create only sets its metric flag to spec's and
	// reports created false; with other parameters it is a Conflict.
	Create(ctx context.Context, name string, spec sketch.Spec) (info sketch.Info, created bool, err error)
	// Describe returns name's parameters, state and estimate.
	Describe(ctx context.Context, name string) (sketch.Info, error)
	// List returns up to limit sketches whose names start with prefix
	// and sort after after, in name order, and whether more follow.
	List(ctx context.Context, prefix, after string, limit int) ([]sketch.Info, bool, error)
	// Delete removes name.
	Delete(ctx context.Context, name string) error
	// Add adds in's ids to name, parsed in the form name's kind takes
	// them (a body the kind cannot take is Invalid). With create, a
	// missing name is first created with the defaults of in.Type(), in
	// the same atomic write. It returns the kind and the count applied.
	Add(ctx context.Context, name string, in sketch.Input, create bool) (sketch.Added, error)
	// AddEvents adds each event's id once to each sketch it names and,
	// on a backend that keeps series, to the buckets its TS falls in of
	// each series it names (series.Spec.Buckets), all or nothing; with
	// create, missing sketches (not series) are created as default HLLs
	// in the same write. It returns how many ids went to sketches and
	// series of each kind (a series counts an event once).
	AddEvents(ctx context.Context, events []sketch.Event, create bool) (map[sketch.Type]int, error)
	// Put creates name as sk, or replaces its state with sk keeping its
	// creation time and metric flag; a sketch of another kind is a
	// Conflict. It returns the new description.
	Put(ctx context.Context, name string, sk sketch.Sketch) (info sketch.Info, created bool, err error)
	// Merge unions sk into name, keeping name's parameters
	// (sketch.Sketch.Merge), and returns the new description.
	Merge(ctx context.Context, name string, sk sketch.Sketch) (sketch.Info, error)
	// Transform stores fn(src's sketch) as dst (which may be src),
	// atomically: no write to src or dst lands in between. fn must not
	// keep or change its argument; its error is returned as is. A missing
	// dst is created; an existing one keeps its creation time and metric
	// flag and must be of the result's kind.
	Transform(ctx context.Context, src, dst string, fn func(sketch.Sketch) (sketch.Sketch, error)) (sketch.Info, error)
	// Union returns the union of names, all of one kind (mixing kinds is
	// a Conflict; parameters combine by the kind's Union rule). With
	// into != "", the union is also stored as into, atomically with
	// respect to writes to any of the sketches involved. The result is
	// the caller's.
	Union(ctx context.Context, names []string, into string) (sketch.Sketch, error)
	// UnionPrefix returns the union of every sketch whose name starts
	// with prefix, except exclude (the name the caller stores the union
	// as, which may start with prefix), and how many sketches it
	// unioned. They must be of one kind (mixing kinds is a Conflict
	// naming a sketch of each); parameters combine by the kind's Union
	// rule. No sketch is NotFound; more than limit is TooLarge. Each
	// sketch is read whole, with every write acknowledged before the
	// call began; the backend unions them where they are stored,
	// without holding them all at once. The result is the caller's.
	UnionPrefix(ctx context.Context, prefix, exclude string, limit int) (sketch.Sketch, int, error)
	// EachPrefix calls fn with every sketch whose name starts with
	// prefix, except exclude, one at a time in name order, and returns
	// how many it gave fn. fn reads the sketch only during the call (it
	// must not keep or change it, nor call the store: the backend may
	// hold the sketch's lock); its error stops the walk and is
	// returned as is. More than limit sketches is TooLarge, refused
	// before fn sees any; none is not an error (0). Each sketch is read
	// whole, with every write acknowledged before the call began; one
	// deleted meanwhile is left out. The backend holds one sketch (and
	// a page of names or rows) at a time, whatever the prefix holds.
	EachPrefix(ctx context.Context, prefix, exclude string, limit int, fn func(name string, sk sketch.Sketch) error) (int, error)
	// View runs fn with the sketches of names (in that order; repeats
	// allowed), unchanged while fn runs. fn must not keep or change them;
	// its error is returned as is.
	View(ctx context.Context, names []string, fn func([]sketch.Sketch) error) error
	// Ready reports whether the backend takes writes now (/readyz).
	Ready() bool
}

// JointRanker is a backend that compares a rank's candidates with an HLL
// target where they are stored (PostgreSQL and Citus with the sketchd_hll
// extension): EachPrefixJoint is EachPrefix for a target for which
// sketch.JointTarget holds, calling fn with each candidate's joint table
// with the target (sk nil) or, for a candidate the table does not answer,
// the candidate itself (j nil), in no particular order. ok false: it read
// nothing and cannot here; the caller uses EachPrefix.
type JointRanker interface {
	EachPrefixJoint(ctx context.Context, prefix, exclude string, limit int, target *hll.Sketch,
		fn func(name string, j *sketch.Joint, sk sketch.Sketch) error) (n int, ok bool, err error)
}

// SeriesStore is the part of the contract that keeps series: named
// sequences of sketches, one per time bucket and level (internal/series
// decides which buckets; the backend keeps them). Errors, atomicity and
// durability are as for Store. A backend without it answers the series
// routes with 501.
type SeriesStore interface {

	// CreateSeries creates the series name with spec (validated). If it
	// exists with the same spec, created is false; with another it is a
	// Conflict. Series and sketches have separate names.
	CreateSeries(ctx context.Context, name string, spec *series.Spec) (info series.Info, created bool, err error)
	// DescribeSeries returns name's spec and what each level holds.
	DescribeSeries(ctx context.Context, name string) (series.Info, error)
	// ListSeries lists series as List lists sketches.
	ListSeries(ctx context.Context, prefix, after string, limit int) ([]series.Info, bool, error)
	// DeleteSeries removes name and all its buckets.
	DeleteSeries(ctx context.Context, name string) error
	// AddSeries adds in's ids, stamped ts, to one bucket per level that
	// keeps ts (series.Spec.Buckets at the backend's clock: a ts too late,
	// too far ahead or kept by no level is Unprocessable and changes
	// nothing), all in one atomic write. It says which levels took them.
	AddSeries(ctx context.Context, name string, ts time.Time, in sketch.Input) (series.Added, error)
	// ChangeSeries applies c to name's definition (series.Spec.Changed:
	// a change the spec refuses is Invalid and changes nothing) and
	// returns the new description. Writes and reads that follow use the
	// new definition; buckets a shorter retention leaves out go at the
	// next ExpireSeries.
	ChangeSeries(ctx context.Context, name string, c series.Change) (series.Info, error)
	// ViewSeries calls plan with name's spec, then fn with the spec and
	// the stored buckets inside the runs plan returned (a bucket no add
	// reached is not stored), in the runs' order and by start within
	// each, starts in the series' zone, unchanged while fn runs. What it
	// costs follows the buckets found, never the runs' span: no lookup,
	// cache entry or memory for an absent bucket. fn must not keep or
	// change them; plan's and fn's errors are returned as they are.
	ViewSeries(ctx context.Context, name string, plan func(*series.Spec) ([]series.Run, error), fn func(*series.Spec, []series.Bucket) error) error
	// ImportSeries writes buckets of name in one atomic, durable write:
	// prepare gets name's spec and returns the buckets to import, at its
	// parameters; the backend plans them with series.Spec.ImportWrites at
	// its clock (whose errors it returns, changing nothing) and applies
	// each write: a replaced bucket takes the sketch as its state, a
	// merged or rolled-up one the union of its state and the sketch. It
	// returns the writes applied, in (level, start) order. prepare's
	// error is returned as is; it may be called again if the series
	// changes meanwhile, and must not keep the spec.
	ImportSeries(ctx context.Context, name string, replace bool, prepare func(*series.Spec) ([]series.Import, error)) ([]series.Write, error)
	// ExpireSeries removes every bucket whose level's retention has run
	// out at now, in every series, and says how much it removed.
	ExpireSeries(ctx context.Context, now time.Time) (series.Expired, error)
}
