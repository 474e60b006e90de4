package sketch

// unionBatch is how many sketches a Unioner holds before it unions them
// into its running result.
const unionBatch = 64

// Unioner unions sketches of one kind given one at a time, holding at
// most a batch of them: the union of many sketches (all those under a
// name prefix) without all of them in memory. Sketches given in one order
// give the same result as Kind.Union of them in that order when they fit
// in one batch, and an equal one for kinds whose union is associative
// (hll, cms, bloom) and for kll sketches of one k (a kll union merges into
// a copy of its first input); theta and freq unions of more than a batch may differ from a
// one-shot union in which entries they retain, within their error bounds.
// The zero value is ready to use.
type Unioner struct {
	first   string
	acc     Sketch
	pending []Sketch
	n       int
}

// Add adds sk, the sketch stored under name, which the Unioner may keep.
// A sketch of another kind than the first is a Conflict naming both.
func (u *Unioner) Add(name string, sk Sketch) error {
	if u.n == 0 {
		u.first = name
	} else if k := u.kind(); sk.Kind() != k {
		return Errorf(Conflict, "cannot combine %s sketch %s with %s sketch %s", k.Type, quote(u.first), sk.Kind().Type, quote(name))
	}
	u.n++
	u.pending = append(u.pending, sk)
	if len(u.pending) == unionBatch {
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
	u.pending = u.pending[:0]
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
