package sketch

import "fmt"

// Conform returns sk at the parameters p (of sk's kind), for a sketch
// built elsewhere that is to join sketches of p (a series' bucket):
//
//   - sk itself when its parameters are p;
//   - for an HLL of p's log2m and regwidth, the same registers (or
//     explicit values) written at p's expthresh and sparse, which only
//     say how a sketch is written;
//   - with fold, a sketch that p can hold only by giving up precision
//     unioned into an empty sketch of p by the kind's own rule: an HLL
//     with more or wider registers folded down (as
//     POST …/raw?fold=true folds), a theta or DataSketches sketch of a
//     larger lg_k resampled.
//
// Anything else is a Conflict naming both parameter sets: another kind,
// or fewer registers than p has (no fold can add them). sk is not
// changed; the result may be sk.
func Conform(sk Sketch, p Params, fold bool) (Sketch, error) {
	if sk.Kind() != p.Kind() {
		return nil, Errorf(Conflict, "a %s sketch cannot join %s sketches", sk.Kind().Type, p.Kind().Type)
	}
	have := sk.Params()
	if have == p {
		return sk, nil
	}
	if h, ok := HLLOf(sk); ok {
		hp := p.(HLLParams)
		got := h.Params()
		switch {
		case got.Log2m == hp.Log2m && got.Regwidth == hp.Regwidth:
			return rewritten(sk, p)
		case got.Log2m < hp.Log2m || got.Regwidth < hp.Regwidth:
			return nil, Errorf(Conflict, "the sketch has %s, fewer or narrower registers than %s: it cannot be folded up", have, p)
		case !fold:
			return nil, Errorf(Conflict, "the sketch has %s, not %s; send ?fold=true to fold it down to log2m=%d regwidth=%d (lossy: it keeps fewer registers)", have, p, hp.Log2m, hp.Regwidth)
		}
		return rewritten(sk, p)
	}
	if !fold {
		return nil, Errorf(Conflict, "the sketch has %s, not %s; send ?fold=true to union it into a sketch of the latter by its kind's rule", have, p)
	}
	return rewritten(sk, p)
}

// rewritten unions sk into an empty sketch of p.
func rewritten(sk Sketch, p Params) (Sketch, error) {
	out, err := p.New()
	if err != nil {
		return nil, err
	}
	if err := out.Merge(sk); err != nil {
		return nil, Wrap(Conflict, err, fmt.Sprintf("the sketch has %s and cannot be written at %s: %s", sk.Params(), p, trimKindPrefix(err.Error())))
	}
	return out, nil
}
