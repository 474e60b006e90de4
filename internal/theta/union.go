package theta

import "slices"

// Union accumulates sketches the way DataSketches' theta union does: it
// keeps the hashes below every input's theta in a QuickSelect table of its
// own lg_k, and Result trims them to the k smallest. The result does not
// depend on the order of the inputs. A Union is built with NewUnion.
type Union struct {
	lgK   uint8
	sk    Sketch // the table; sk.theta is the table's own theta
	theta uint64 // the least theta of the inputs
	empty bool
}

// NewUnion returns a union whose result keeps at most 2^p.LgK hashes.
func NewUnion(p Params) (*Union, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	u := &Union{lgK: uint8(p.LgK)}
	u.init()
	return u, nil
}

func (u *Union) init() {
	u.sk = Sketch{lgK: u.lgK, theta: MaxTheta}
	u.theta = MaxTheta
	u.empty = true
}

// Add merges o into the union. An empty sketch changes nothing. Hashes at
// or above the union's theta are skipped; a sorted sketch stops there.
func (u *Union) Add(o *Sketch) {
	if o.empty {
		return
	}
	u.empty = false
	u.theta = min(u.theta, o.theta)
	if o.table == nil {
		for _, h := range o.sorted {
			if h >= u.theta || h >= u.sk.theta {
				break
			}
			u.insert(h)
		}
	} else {
		for _, h := range o.table {
			if h != 0 && h < u.theta && h < u.sk.theta {
				u.insert(h)
			}
		}
	}
	u.theta = min(u.theta, u.sk.theta)
}

func (u *Union) insert(h uint64) {
	if u.sk.table == nil {
		u.sk.rehash(minLgSize, nil)
	}
	u.sk.insert(h)
}

// Result returns the union as a new sketch with the union's lg_k: the k
// smallest hashes below every input's theta, and theta the (k+1)-th
// smallest of them if there are more than k, else the least input theta.
func (u *Union) Result() *Sketch {
	r := &Sketch{lgK: u.lgK, empty: u.empty, theta: min(u.theta, u.sk.theta)}
	if u.empty {
		return r
	}
	e := make([]uint64, 0, u.sk.n)
	for _, h := range u.sk.table {
		if h != 0 && h < r.theta {
			e = append(e, h)
		}
	}
	if k := 1 << u.lgK; len(e) > k {
		r.theta = nthSmallest(e, k)
		e = e[:k:k]
	}
	slices.Sort(e)
	r.sorted = e
	return r
}
