package server

import (
	"net/http"

	"github.com/sketchd/sketchd/internal/sketch"
)

// handleOverlap counts how 2 to 64 sets overlap: the users in exactly k
// and in at least k of them, and in each one only (sketch.EstimateOverlap;
// two sets by the intersection's estimator, method as for
// /v1/intersection).
// The operands are read first (each consistently, as a union's are) and
// counted outside any store view: a large overlap takes tens of
// milliseconds.
func (s *Server) handleOverlap(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	var req overlapRequest
	if err := s.decodeJSON(w, r, &req, false); err != nil {
		return err
	}
	if _, err := checkOperands("sketches", req.Sketches, sketch.MinOverlap, sketch.MaxOverlap); err != nil {
		return err
	}
	if err := s.allowOperands(r.Context(), "sketches", req.Sketches); err != nil {
		return err
	}
	method, err := sketch.ParseMethod(req.Method)
	if err != nil {
		return sketch.Wrap(sketch.Invalid, err, `method must be "inclusion_exclusion" or "mle" (or absent for the default)`)
	}
	sks, warnings, err := s.resolve(r.Context(), req.Sketches)
	if err != nil {
		return err
	}
	labels := make([]string, len(req.Sketches))
	for i, o := range req.Sketches {
		labels[i] = o.label()
	}
	o, err := sketch.EstimateOverlap(labels, sks, method)
	if err != nil {
		return err // classified: Invalid, Conflict or internal
	}
	resp := overlapDTO(labels, o)
	resp.Warnings = append(resp.Warnings, warnings...)
	return writeJSON(w, http.StatusOK, resp)
}
