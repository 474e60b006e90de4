package sketch

// unionBatch is how many sketches a Unioner holds before it unions them
// into its running result; unionBatchBytes how much memory (MemoryBytes)
// they may hold before it does so sooner.
const (
	unionBatch      = 64
	unionBatchBytes = 64 << 20
)

// Unioner unions sketches of one kind given one at a time, holding at
// most a batch of them: the union of many sketches (all those under a
// name prefix) without all of them in memory. Sketches given in one order
// give the same result as Kind.Union of them in that order when they fit
// in one batch, and an equal one for kinds whose union is associative
// (hll, cms, bloom) and for kll sketches of one k (a kll union merges into
// a copy of its first input); theta and freq unions of more than a batch may differ from a
// one-shot union in which entries they retain, within their error bounds.
//
// A batch is at most unionBatch sketches and unionBatchBytes of memory.
// A big sketch (a batch of them would pass unionBatchBytes: a Bloom
// filter of 2^27 bits is 16 MiB) with the parameters of the running
// result is merged into it in place when nothing waits in the batch, so
// a union of many big sketches holds the result and the sketch being
// merged, not a batch of copies. The memory a union needs is then at most
// unionBatchBytes plus twice the largest sketch, whatever the number or
// size of its inputs.
// The zero value is ready to use.
type Unioner struct {
	first        string
	acc          Sketch
	pending      []Sketch
	pendingBytes int64
	n            int
}

// Add adds sk, the sketch stored under name, which the Unioner may keep.
// A sketch of another kind than the first is a Conflict naming both.
func (u *Unioner) Add(name string, sk Sketch) error { return u.add(name, sk, false) }

// AddLent adds sk, the sketch stored under name, which the Unioner reads
// only during the call (a store's own copy, under its lock): whatever it
// keeps, it copies.
func (u *Unioner) AddLent(name string, sk Sketch) error { return u.add(name, sk, true) }

func (u *Unioner) add(name string, sk Sketch, lent bool) error {
	if u.n == 0 {
		u.first = name
	} else if k := u.kind(); sk.Kind() != k {
		return Errorf(Conflict, "cannot combine %s sketch %s with %s sketch %s", k.Type, quote(u.first), sk.Kind().Type, quote(name))
	}
	u.n++
	size := sk.MemoryBytes()
	big := size*unionBatch > unionBatchBytes
	switch {
	case big && u.acc == nil && len(u.pending) == 0:
		// The first: its union alone is a new sketch, no copy needed.
		acc, err := sk.Kind().Union([]Sketch{sk})
		u.acc = acc
		return err
	case big && u.acc != nil && len(u.pending) == 0 && sk.Params() == u.acc.Params():
		return u.acc.Merge(sk)
	}
	if lent {
		sk = sk.Clone()
	}
	u.pending = append(u.pending, sk)
	u.pendingBytes += size
	if big || len(u.pending) == unionBatch || u.pendingBytes >= unionBatchBytes {
		return u.flush()
	}
	return nil
}

// Len is the number of sketches added.
func (u *Unioner) Len() int { return u.n }

// Result returns the union of the sketches added (nil if none).
func (u *Unioner) Result() (Sketch, error) {
	if err := u.flush(); err != nil {
		return nil, err
	}
	return u.acc, nil
}

func (u *Unioner) kind() *Kind {
	if u.acc != nil {
		return u.acc.Kind()
	}
	return u.pending[0].Kind()
}

func (u *Unioner) flush() error {
	if len(u.pending) == 0 {
		return nil
	}
	all := u.pending
	if u.acc != nil {
		all = append([]Sketch{u.acc}, u.pending...)
	}
	acc, err := all[0].Kind().Union(all)
	if err != nil {
		return err
	}
	u.acc = acc
	clear(u.pending)
	u.pending, u.pendingBytes = u.pending[:0], 0
	return nil
}

// NoneWithPrefix is the NotFound error of a prefix union that matches no
// sketch.
func NoneWithPrefix(prefix string) error {
	return Errorf(NotFound, "no sketch's name starts with %s", quoteName(prefix))
}

// TooManyWithPrefix is the TooLarge error of a prefix union that matches
// more than limit sketches.
func TooManyWithPrefix(prefix string, limit int) error {
	return Errorf(TooLarge, "more than %d sketches' names start with %s; a prefix union takes at most %d", limit, quoteName(prefix), limit)
}
