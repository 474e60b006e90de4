package server

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// routes is DESIGN.md's route table. Reads need a read token, writes a
// write token (when auth is on); operations routes stay open, and
// /metrics too unless Config.AuthMetrics.
func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	// GetHead answers HEAD on every GET route like GET; net/http sends
	// the headers (Content-Length included) and drops the body.
	r.Use(middleware.GetHead, s.requestID, s.observe, s.recoverPanics)
	r.NotFound(s.handle(func(w http.ResponseWriter, r *http.Request) error {
		return &httpError{http.StatusNotFound, "no route for " + clip(r.URL.Path) + "; see /openapi.yaml"}
	}))
	mux := r
	r.MethodNotAllowed(s.handle(func(w http.ResponseWriter, r *http.Request) error {
		// RFC 9110 requires a 405 to list the methods the route has.
		allowed := allowedMethods(mux, r)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		return &httpError{http.StatusMethodNotAllowed, r.Method + " is not allowed on " + clip(r.URL.Path) + "; use " + strings.Join(allowed, " or ")}
	}))

	// The console is a page of public files: it holds no data, so it
	// needs no token; the API calls it makes do.
	r.Get("/", s.handle(s.handleConsolePage))
	r.Get("/console/{file}", s.handle(s.handleConsoleFile))
	r.Get("/healthz", s.handleHealthz)
	r.Get("/readyz", s.handleReadyz)
	r.Get("/openapi.yaml", s.handleOpenAPI)
	if s.cfg.AuthMetrics {
		// It names every sketch with the metric flag: not for a token
		// limited to prefixes.
		r.With(s.require(roleRead), s.wholeServer).Get("/metrics", s.handleMetrics)
	} else {
		r.Get("/metrics", s.handleMetrics)
	}

	r.Route("/v1", func(r chi.Router) {
		read := r.With(s.require(roleRead), s.deadline(s.cfg.ReadTimeout, "-read-timeout", false))
		// Every write takes an Idempotency-Key (idempotency.go).
		write := r.With(s.require(roleWrite), s.deadline(s.cfg.WriteTimeout, "-write-timeout", true), s.limitWrites, s.idempotent)

		read.Get("/sketches", s.handle(s.handleList))
		// An admin token's (the handler checks): it reads everything.
		// A backup streams for as long as the store takes: it has no
		// request deadline (the handler requires an admin token).
		r.With(s.require(roleRead)).Get("/backup", s.handle(s.handleBackup))
		write.Put("/sketches/{name}", s.handle(s.handleCreate))
		read.Get("/sketches/{name}", s.handle(s.handleDescribe))
		write.Delete("/sketches/{name}", s.handle(s.handleDelete))
		write.Patch("/sketches/{name}", s.handle(s.handleExpiry))
		write.Post("/sketches/{name}/add", s.handle(s.handleAdd))
		write.Post("/events", s.handle(s.handleEvents))
		read.Post("/sketches/{name}/frequency", s.handle(s.handleFrequencyPost))
		read.Get("/sketches/{name}/frequency", s.handle(s.handleFrequencyGet))
		read.Get("/sketches/{name}/top", s.handle(s.handleTop))
		read.Get("/sketches/{name}/frequency_report", s.handle(s.handleFrequencyReport))
		read.Post("/sketches/{name}/check", s.handle(s.handleCheck))
		read.Get("/sketches/{name}/range", s.handle(s.handleRange))
		read.Get("/sketches/{name}/quantile", s.handle(s.handleQuantile))
		read.Get("/sketches/{name}/rank", s.handle(s.handleRank))
		read.Get("/sketches/{name}/cdf", s.handle(s.handleCDF))
		read.Get("/sketches/{name}/pmf", s.handle(s.handlePMF))
		// A union stored "into" a sketch is a write; the handler checks.
		read.With(s.idempotent).Post("/union", s.handle(s.handleUnion))
		read.Post("/intersection", s.handle(s.handleIntersection))
		read.Post("/overlap", s.handle(s.handleOverlap))
		read.Post("/rank", s.handle(s.handleRankOverlap))
		read.Post("/retention", s.handle(s.handleRetention))
		read.Post("/funnel", s.handle(s.handleFunnel))
		write.Post("/sketches/{name}/fold", s.handle(s.handleFold))
		read.Get("/sketches/{name}/raw", s.handle(s.handleRawGet))
		write.Put("/sketches/{name}/raw", s.handle(s.handleRawPut))
		write.Post("/sketches/{name}/raw", s.handle(s.handleRawPost))

		read.Get("/series", s.handle(s.handleSeriesList))
		write.Put("/series/{name}", s.handle(s.handleSeriesCreate))
		read.Get("/series/{name}", s.handle(s.handleSeriesDescribe))
		write.Patch("/series/{name}", s.handle(s.handleSeriesChange))
		write.Delete("/series/{name}", s.handle(s.handleSeriesDelete))
		write.Post("/series/{name}/add", s.handle(s.handleSeriesAdd))
		read.Get("/series/{name}/count", s.handle(s.handleSeriesCount))
		read.Get("/series/{name}/timeseries", s.handle(s.handleSeriesTimeseries))
		read.Get("/series/{name}/top", s.handle(s.handleSeriesTop))
		read.Get("/series/{name}/frequency_report", s.handle(s.handleSeriesFrequencyReport))
		read.Post("/series/{name}/check", s.handle(s.handleSeriesCheck))
		read.Get("/series/{name}/range", s.handle(s.handleSeriesRangeCount))
		read.Get("/series/{name}/quantile", s.handle(s.handleSeriesQuantile))
		read.Get("/series/{name}/rank", s.handle(s.handleSeriesRank))
		read.Get("/series/{name}/cdf", s.handle(s.handleSeriesCDF))
		read.Get("/series/{name}/pmf", s.handle(s.handleSeriesPMF))
		read.Get("/series/{name}/raw", s.handle(s.handleSeriesRaw))
		write.Put("/series/{name}/buckets", s.handle(s.handleBucketsImport(true)))
		write.Post("/series/{name}/buckets", s.handle(s.handleBucketsImport(false)))
		write.Put("/series/{name}/buckets/{level}/{start}", s.handle(s.handleBucketImport(true)))
		write.Post("/series/{name}/buckets/{level}/{start}", s.handle(s.handleBucketImport(false)))
	})
	s.patterns = map[string]bool{}
	chi.Walk(r, func(_, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		s.patterns[route] = true
		return nil
	})
	return r
}

// allowedMethods lists the methods r's path is routed for.
func allowedMethods(mux *chi.Mux, r *http.Request) []string {
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		if mux.Find(chi.NewRouteContext(), m, path) != "" {
			out = append(out, m)
			if m == http.MethodGet {
				out = append(out, http.MethodHead)
			}
		}
	}
	return out
}
