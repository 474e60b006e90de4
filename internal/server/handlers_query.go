package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/freq"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/theta"
)

// Limits on query fan-in.
const (
	maxUnionSketches = 1000
	maxFrequencyIDs  = 10000
)

func (s *Server) handleFrequencyPost(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	if _, err := query(r); err != nil {
		return err
	}
	var req struct {
		IDs []json.RawMessage `json:"ids"`
	}
	if err := s.decodeJSON(w, r, &req, false); err != nil {
		return err
	}
	if req.IDs == nil {
		return sketch.Errorf(sketch.Invalid, `send {"ids":[...]}`)
	}
	if len(req.IDs) > maxFrequencyIDs {
		return sketch.Errorf(sketch.TooLarge, "%d ids; at most %d per frequency query", len(req.IDs), maxFrequencyIDs)
	}
	ids, err := parseRawIDs(len(req.IDs), func(i int) []byte { return req.IDs[i] }, "ids[%d]")
	if err != nil {
		return err
	}
	return s.frequency(w, r, name, ids)
}

// handleFrequencyGet answers ?id= (repeatable); ids are integers unless
// id_type=text.
func (s *Server) handleFrequencyGet(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	q, err := query(r, "id*", "id_type")
	if err != nil {
		return err
	}
	idType, hasType := first(q, "id_type")
	if hasType && idType != "int" && idType != "text" {
		return sketch.Errorf(sketch.Invalid, "query parameter id_type=%q must be int or text", clip(idType))
	}
	raw := q["id"]
	if len(raw) == 0 {
		return sketch.Errorf(sketch.Invalid, "give at least one ?id=")
	}
	if len(raw) > maxFrequencyIDs {
		return sketch.Errorf(sketch.TooLarge, "%d ids; at most %d per frequency query", len(raw), maxFrequencyIDs)
	}
	ids := make([]cms.ID, len(raw))
	for i, v := range raw {
		if idType == "text" {
			ids[i] = cms.TextID(v)
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return sketch.Errorf(sketch.Invalid, "id=%q is not an int64; add id_type=text for text ids", clip(v))
		}
		ids[i] = cms.IntID(n)
	}
	return s.frequency(w, r, name, ids)
}

func (s *Server) frequency(w http.ResponseWriter, r *http.Request, name string, ids []cms.ID) error {
	var resp frequencyResponse
	err := s.viewCMS(r.Context(), name, func(c *cms.Sketch) error {
		resp.Total = c.Total()
		bound, conf := c.ErrorBound(), c.Confidence()
		resp.Results = make([]frequencyResult, len(ids))
		for i, id := range ids {
			resp.Results[i] = frequencyResult{ID: idValue(id), Estimate: c.Estimate(id), ErrorBound: bound, Confidence: conf}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, resp)
}

// handleTop lists a CMS's heavy hitters, heaviest first.
func (s *Server) handleTop(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	q, err := query(r, "k")
	if err != nil {
		return err
	}
	k, err := intParam(q, "k", 0, 1, cms.MaxTopK)
	if err != nil {
		return err
	}
	resp := topResponse{Items: []topItem{}}
	err = s.viewCMS(r.Context(), name, func(c *cms.Sketch) error {
		if c.Params().TopK == 0 {
			return sketch.Errorf(sketch.Conflict, "sketch %q keeps no heavy hitters; create it with topk > 0", name)
		}
		for _, it := range c.Top(k) {
			resp.Items = append(resp.Items, topItem{ID: idValue(it.ID), Estimate: it.Count})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, resp)
}

// handleUnion estimates the union of sketches, optionally storing it.
func (s *Server) handleUnion(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	var req unionRequest
	if err := s.decodeJSON(w, r, &req, false); err != nil {
		return err
	}
	est, err := estimatorParam("estimator", req.Estimator)
	if err != nil {
		return err
	}
	if est != hll.PostgreSQLEstimator && req.Into != "" {
		return sketch.Errorf(sketch.Invalid, `estimator applies to a union answered, not stored: leave "into" out, or describe the stored sketch with ?estimator=%s`, est)
	}
	var names []string
	if req.Prefix != nil {
		if req.Sketches != nil {
			return sketch.Errorf(sketch.Invalid, `give "sketches" or "prefix", not both`)
		}
		if err := checkPrefix("prefix", *req.Prefix); err != nil {
			return err
		}
		if err := s.allowPrefix(r.Context(), "prefix", *req.Prefix); err != nil {
			return err
		}
	} else if names, err = checkOperands("sketches", req.Sketches, 1, maxUnionSketches); err != nil {
		return err
	} else if err := s.allowOperands(r.Context(), "sketches", req.Sketches); err != nil {
		return err
	}
	if req.Into != "" {
		if err := sketch.ValidateName(req.Into); err != nil {
			return sketch.Errorf(sketch.Invalid, "into: %s", err.(*sketch.Error).Detail)
		}
		if err := requireWrite(r.Context()); err != nil {
			return err
		}
		if err := s.allowNames(r.Context(), "into", req.Into); err != nil {
			return err
		}
		// The route is a read; storing the union is a write and takes
		// a write slot like the write routes.
		release, err := s.acquireWrite()
		if err != nil {
			return err
		}
		defer release()
	}
	// A union of prefixes or series ranges is read first; the store then
	// writes into atomically. A union of named sketches is read and stored
	// by the store in one atomic write.
	var u sketch.Sketch
	var warnings []string
	matched := 0
	switch {
	case req.Prefix != nil:
		u, matched, err = s.store.UnionPrefix(r.Context(), *req.Prefix, req.Into, maxPrefixSketches)
	case names == nil:
		u, warnings, err = s.unionOperands(r.Context(), req.Sketches, req.Into)
	}
	if err != nil {
		return err
	}
	render := func(res idem.Result) (*answer, error) {
		if res.Sketch != nil {
			u = res.Sketch
		}
		if err := needsHLL("estimator", est, u); err != nil {
			return nil, err
		}
		return unionAnswer(u, req.Into, matched, warnings, est)
	}
	if req.Into == "" {
		if names != nil {
			if u, err = s.store.Union(r.Context(), names, ""); err != nil {
				return err
			}
		}
		a, err := render(idem.Result{})
		if err != nil {
			return err
		}
		a.write(w)
		return nil
	}
	return s.commit(w, r, render, func(ctx context.Context) (res idem.Result, err error) {
		if names != nil {
			res.Sketch, err = s.store.Union(ctx, names, req.Into)
			return res, err
		}
		_, _, err = s.store.Put(ctx, req.Into, u.Clone())
		return res, err
	})
}

// unionAnswer renders the answer of a union.
func unionAnswer(u sketch.Sketch, into string, matched int, warnings []string, est hll.Estimator) (*answer, error) {
	if c, ok := sketch.CMSOf(u); ok {
		p := c.Params()
		return jsonAnswer(http.StatusOK, unionCMSResponse{Type: string(sketch.TypeCMS), Total: c.Total(), Width: p.Width, Depth: p.Depth,
			Into: into, Matched: matched, Warnings: warnings})
	}
	if resp, ok := unionRegisters(u, into, warnings); ok {
		resp.Matched = matched
		return jsonAnswer(http.StatusOK, resp)
	}
	if p, ok := u.Params().(sketch.KLLParams); ok {
		var in sketch.Info
		u.Describe(&in)
		return jsonAnswer(http.StatusOK, unionKLLResponse{Type: string(sketch.TypeKLL), kllState: kllStateOf(p, in), Into: into, Warnings: warnings})
	}
	if p, ok := u.Params().(sketch.BloomParams); ok {
		var in sketch.Info
		u.Describe(&in)
		return jsonAnswer(http.StatusOK, unionBloomResponse{Type: string(sketch.TypeBloom), bloomState: bloomStateOf(p, in), Into: into, Warnings: warnings})
	}
	h, ok := sketch.HLLOf(u)
	if !ok {
		var in sketch.Info
		u.Describe(&in)
		return jsonAnswer(http.StatusOK, unionSampledResponse{Type: string(u.Kind().Type), Cardinality: in.Cardinality,
			Lower: in.Lower, Upper: in.Upper, Retained: in.Retained, Theta: in.Theta, Into: into, Matched: matched, Warnings: warnings})
	}
	resp := unionDTO(h, into, est)
	resp.Matched = matched
	resp.Warnings = warnings
	return jsonAnswer(http.StatusOK, resp)
}

// unionOperands unions sketches, prefixes and series ranges (leaving
// into out of a prefix), each operand read consistently, one after
// another.
func (s *Server) unionOperands(ctx context.Context, ops []operand, into string) (sketch.Sketch, []string, error) {
	sks, warnings, err := s.resolveExcept(ctx, ops, into)
	if err != nil {
		return nil, nil, err
	}
	labels := make([]string, len(ops))
	for i, o := range ops {
		labels[i] = o.label()
	}
	if err := sketch.SameKind(labels, sks); err != nil {
		return nil, nil, err
	}
	u, err := sks[0].Kind().Union(sks)
	if err != nil {
		return nil, nil, err
	}
	return u, warnings, nil
}

func unionDTO(h *hll.Sketch, into string, est hll.Estimator) unionResponse {
	p := h.Params()
	a := h.Answer(est)
	return unionResponse{
		Cardinality: finite(a.Estimate), StdError: finite(a.StdError), LowerBound: finite(a.LowerBound), UpperBound: finite(a.UpperBound),
		Estimator: est.String(), Log2m: p.Log2m, Regwidth: p.Regwidth,
		Representation: h.Representation().String(), Into: into,
	}
}

// estimatorQuery reads ?estimator=.
func estimatorQuery(q map[string][]string) (hll.Estimator, error) {
	v, _ := first(q, "estimator")
	return estimatorParam("estimator", v)
}

// estimatorParam reads an hll estimator's name ("postgresql", the
// default, or "improved") from the request field or query parameter
// named field.
func estimatorParam(field, v string) (hll.Estimator, error) {
	e, ok := hll.ParseEstimator(v)
	if !ok {
		return 0, sketch.Errorf(sketch.Invalid, `%s=%q is not an estimator: use "postgresql" (postgresql-hll's, the default) or "improved" (Ertl's)`, field, clip(v))
	}
	return e, nil
}

// needsHLL refuses an estimator other than the default for a sketch that
// is not an hll: only hll answers have a choice of estimator.
func needsHLL(field string, e hll.Estimator, u sketch.Sketch) error {
	if _, ok := sketch.HLLOf(u); ok || e == hll.PostgreSQLEstimator {
		return nil
	}
	return sketch.Errorf(sketch.Invalid, "%s=%s applies to hll sketches; this is a %s sketch", field, e, u.Kind().Type)
}

// handleIntersection estimates the intersection of 2 to 8 HLL sketches
// with its error envelope.
func (s *Server) handleIntersection(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	var req intersectionRequest
	if err := s.decodeJSON(w, r, &req, false); err != nil {
		return err
	}
	names, err := checkOperands("sketches", req.Sketches, 2, 8)
	if err != nil {
		return err
	}
	if err := s.allowOperands(r.Context(), "sketches", req.Sketches); err != nil {
		return err
	}
	method, err := sketch.ParseMethod(req.Method)
	if err != nil {
		return sketch.Wrap(sketch.Invalid, err, `method must be "inclusion_exclusion" or "mle" (or absent for the default)`)
	}
	var resp any
	if names != nil {
		err = s.store.View(r.Context(), names, func(sks []sketch.Sketch) error {
			var err error
			resp, err = intersect(names, sks, method, nil)
			return err
		})
	} else {
		var sks []sketch.Sketch
		var warnings []string
		if sks, warnings, err = s.resolve(r.Context(), req.Sketches); err == nil {
			labels := make([]string, len(req.Sketches))
			for i, o := range req.Sketches {
				labels[i] = o.label()
			}
			resp, err = intersect(labels, sks, method, warnings)
		}
	}
	if err != nil {
		return err // Intersect classifies what the client caused as Invalid
	}
	return writeJSON(w, http.StatusOK, resp)
}

// intersect estimates the intersection of sketches of one kind: HLL by
// inclusion-exclusion or the MLE with the error envelope, ds_hll, cpc,
// zeta_hll and airlift_hll by inclusion-exclusion of their own unions with the same envelope
// (sketch.IntersectFamily), theta by DataSketches' theta intersection
// with its own bounds. extra warnings
// (from series ranges) join the answer's.
func intersect(labels []string, sks []sketch.Sketch, method sketch.Method, extra []string) (any, error) {
	if err := sketch.SameKind(labels, sks); err != nil {
		return nil, err
	}
	if _, ok := sketch.ThetaOf(sks[0]); ok {
		ts := make([]*theta.Sketch, len(sks))
		for i, sk := range sks {
			ts[i], _ = sketch.ThetaOf(sk)
		}
		resp, err := thetaIntersectionDTO(labels, ts)
		if err != nil {
			return nil, err
		}
		resp.Warnings = append(resp.Warnings, extra...)
		return resp, nil
	}
	switch sks[0].Kind().Type {
	case sketch.TypeDSHLL, sketch.TypeCPC, sketch.TypeZetaHLL, sketch.TypeAirliftHLL:
		x, err := sketch.IntersectFamily(labels, sks, method)
		if err != nil {
			return nil, err
		}
		resp := intersectionDTO(x)
		resp.Warnings = append(resp.Warnings, extra...)
		return resp, nil
	}
	hs := make([]*hll.Sketch, len(sks))
	for i, sk := range sks {
		h, ok := sketch.HLLOf(sk)
		if !ok {
			return nil, sketch.Errorf(sketch.Conflict, "intersections take hll, theta, ds_hll, cpc, zeta_hll or airlift_hll sketches; %q is a %s sketch", labels[i], sk.Kind().Type)
		}
		hs[i] = h
	}
	x, err := sketch.Intersect(labels, hs, method)
	if err != nil {
		return nil, err
	}
	resp := intersectionDTO(x)
	resp.Warnings = append(resp.Warnings, extra...)
	return resp, nil
}

// handleFold folds a sketch to fewer registers (and optionally narrower
// ones), in place or into another sketch.
func (s *Server) handleFold(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	if _, err := query(r); err != nil {
		return err
	}
	var req foldRequest
	if err := s.decodeJSON(w, r, &req, false); err != nil {
		return err
	}
	if req.Log2m == nil {
		return sketch.Errorf(sketch.Invalid, "log2m is required")
	}
	into := name
	if req.Into != "" {
		if err := sketch.ValidateName(req.Into); err != nil {
			return sketch.Errorf(sketch.Invalid, "into: %s", err.(*sketch.Error).Detail)
		}
		if err := s.allowNames(r.Context(), "into", req.Into); err != nil {
			return err
		}
		into = req.Into
	}
	regwidth := 0
	if req.Regwidth != nil {
		regwidth = *req.Regwidth
		if regwidth < hll.MinRegwidth || regwidth > hll.MaxRegwidth {
			return sketch.Errorf(sketch.Invalid, "regwidth %d not in %d..%d", regwidth, hll.MinRegwidth, hll.MaxRegwidth)
		}
	}
	log2m := *req.Log2m
	fold := func(sk sketch.Sketch) (sketch.Sketch, error) {
		h, ok := sketch.HLLOf(sk)
		if !ok {
			return nil, sketch.WrongKind(name, sk.Kind().Type, sketch.TypeHLL)
		}
		rw := regwidth
		if rw == 0 {
			rw = h.Params().Regwidth
		}
		f, err := foldHLL(h, log2m, rw)
		if err != nil {
			return nil, err
		}
		return sketch.NewHLL(f), nil
	}
	return s.commit(w, r, describeAnswer, func(ctx context.Context) (res idem.Result, err error) {
		res.Info, err = s.store.Transform(ctx, name, into, fold)
		return res, err
	})
}

// foldHLL folds h for a fold or a download at log2m. More registers than
// h has is a Conflict, as a union upload with fewer registers is without
// ?fold=true: the request is sound, the stored sketch rules it out.
// Parameters out of range are Invalid.
func foldHLL(h *hll.Sketch, log2m, regwidth int) (*hll.Sketch, error) {
	if have := h.Params().Log2m; log2m > have {
		return nil, sketch.Errorf(sketch.Conflict, "cannot fold log2m=%d up to %d", have, log2m)
	}
	f, err := h.Fold(log2m, regwidth)
	if err != nil {
		return nil, sketch.Wrap(sketch.Invalid, err, strings.TrimPrefix(err.Error(), "hll: "))
	}
	return f, nil
}

// viewCMS runs fn with the Count-Min sketch name, unchanged while fn runs.
func (s *Server) viewCMS(ctx context.Context, name string, fn func(*cms.Sketch) error) error {
	return s.store.View(ctx, []string{name}, func(sks []sketch.Sketch) error {
		c, ok := sketch.CMSOf(sks[0])
		if !ok {
			return sketch.WrongKind(name, sks[0].Kind().Type, sketch.TypeCMS)
		}
		return fn(c)
	})
}

// viewHLLs runs fn with the HLL sketches names, in order, unchanged while
// fn runs.
func (s *Server) viewHLLs(ctx context.Context, names []string, fn func([]*hll.Sketch) error) error {
	return s.store.View(ctx, names, func(sks []sketch.Sketch) error {
		hs := make([]*hll.Sketch, len(sks))
		for i, sk := range sks {
			h, ok := sketch.HLLOf(sk)
			if !ok {
				return sketch.WrongKind(names[i], sk.Kind().Type, sketch.TypeHLL)
			}
			hs[i] = h
		}
		return fn(hs)
	})
}

// handleFrequencyReport answers a frequency sketch's report: reach, and
// per frequency class k = 1..max-1 and "max or more" the users and
// impressions, each with bounds at sd standard deviations.
func (s *Server) handleFrequencyReport(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	q, err := query(r, "max", "sd")
	if err != nil {
		return err
	}
	maxClass, err := intParam(q, "max", 10, 2, freq.MaxClasses)
	if err != nil {
		return err
	}
	sd, err := intParam(q, "sd", 2, 1, 3)
	if err != nil {
		return err
	}
	var resp frequencyReportResponse
	err = s.store.View(r.Context(), []string{name}, func(sks []sketch.Sketch) error {
		f, ok := sketch.FreqOf(sks[0])
		if !ok {
			return sketch.WrongKind(name, sks[0].Kind().Type, sketch.TypeFreq)
		}
		rep, err := f.FrequencyReport(maxClass, sd)
		if err != nil {
			return sketch.Wrap(sketch.Invalid, err, strings.TrimPrefix(err.Error(), "freq: "))
		}
		resp = frequencyReportDTO(rep)
		return nil
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, resp)
}
