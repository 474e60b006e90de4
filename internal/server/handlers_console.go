package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// handleConsolePage serves the console's page (internal/console).
func (s *Server) handleConsolePage(w http.ResponseWriter, r *http.Request) error {
	if s.consoleErr != nil {
		return s.consoleErr
	}
	s.console.Page(w, r)
	return nil
}

// handleConsoleFile serves one of the console's scripts, styles or
// images.
func (s *Server) handleConsoleFile(w http.ResponseWriter, r *http.Request) error {
	if s.consoleErr != nil {
		return s.consoleErr
	}
	name := chi.URLParam(r, "file")
	if !s.console.File(w, r, name) {
		return &httpError{http.StatusNotFound, "the console has no file " + clip(name)}
	}
	return nil
}
