package metrics

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a fresh registry holding the Go runtime and process
// collectors (go_*, process_*), ready to be passed to New. It never touches
// the prometheus default registry.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// Handler serves g in the Prometheus exposition formats for GET /metrics.
// A failing collector (for example an opted-in sketch whose name is not a
// valid label value) is logged on logger and left out, and the rest is still
// served, so one bad sample never blinds the whole dashboard. A nil logger
// discards those errors.
func Handler(g prometheus.Gatherer, logger *slog.Logger) http.Handler {
	opts := promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}
	if logger != nil {
		opts.ErrorLog = slogPrinter{logger}
	}
	return promhttp.HandlerFor(g, opts)
}

// slogPrinter adapts a *slog.Logger to promhttp.Logger.
type slogPrinter struct{ l *slog.Logger }

// Println logs v at error level.
func (p slogPrinter) Println(v ...any) {
	p.l.Error("metrics: gather", "err", fmt.Sprint(v...))
}
