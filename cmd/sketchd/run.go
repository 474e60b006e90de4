package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sketchd/sketchd/api"
	"github.com/sketchd/sketchd/internal/metrics"
	"github.com/sketchd/sketchd/internal/server"
	"github.com/sketchd/sketchd/internal/store/bolt"
	"github.com/sketchd/sketchd/internal/store/postgres"
)

// run starts sketchd and blocks until ctx ends (then shuts down cleanly
// and returns nil) or it fails. With -h or -version it writes the usage or
// the build information to stdout and returns nil; "check" as the first
// argument runs the offline check instead (runCheck), and "backup",
// "restore" and "copy" the archive commands (archive_cmds.go). Every piece
// of configuration, the token file and the listen addresses are checked
// before the data file is opened (and perhaps migrated).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runOn(ctx, host{}, args, getenv, stdout, stderr)
}

// host is what sketchd reads of its process besides flags and settings:
// main passes the real one, tests (through run) none.
type host struct {
	// environ is the process's KEY=value pairs: SKETCHD_ variables that
	// no flag reads are warned about (a misspelt name is otherwise
	// ignored without a word).
	environ []string
	// terminal says stdin is a terminal: someone pressed Ctrl-C, and
	// there is no load balancer to wait for, so the drain delay is 0
	// unless -drain-delay was given.
	terminal bool
	// stderrTerminal says stderr is a terminal: backup, restore and copy
	// show their progress there.
	stderrTerminal bool
}

// runOn is run on a host.
func runOn(ctx context.Context, h host, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		var term io.Writer
		if h.stderrTerminal {
			term = stderr
		}
		switch args[0] {
		case "check":
			return runCheck(args[1:], getenv, stdout)
		case "backup":
			return runBackup(ctx, args[1:], stdout, term)
		case "restore":
			return runRestore(ctx, args[1:], stdout, term)
		case "copy":
			return runCopy(ctx, args[1:], stdout, term)
		}
	}
	cfg, err := parseConfig(args, getenv, stdout)
	if err != nil {
		return err
	}
	switch {
	case cfg.help:
		return nil
	case cfg.version:
		_, err := fmt.Fprintf(stdout, "sketchd %s revision %s %s\n", buildVersion(), revisionOrHint(buildRevision()), runtime.Version())
		return err
	}
	log := newLogger(cfg, stderr)
	for _, w := range unknownSettings(h.environ) {
		log.Warn(w)
	}
	drainDelay := cfg.drainDelay
	if h.terminal && !cfg.drainDelaySet {
		drainDelay = 0
	}
	// Whatever run started ends with it, on every path.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	defer ln.Close() // after Serve returns; closing twice is harmless
	if cfg.debugAddr != "" {
		if err := serveDebug(ctx, cfg.debugAddr, log); err != nil {
			return err
		}
	}

	// The store reports commits to the metrics, which read the store at
	// scrape time: the observer is wired once both exist.
	var obs observer
	db, err := openStore(ctx, cfg, log, &obs)
	if err != nil {
		return err
	}
	defer func() {
		if err := db.Close(); err != nil {
			log.Error("closing the store", "err", err)
		}
	}()
	reg := metrics.NewRegistry()
	m := metrics.New(reg, metrics.Options{Version: buildVersion(), Revision: buildRevision(), Source: db, Quantiles: cfg.metricQuantiles})
	obs.m.Store(m)
	if u, ok := db.(interface{ UnreadableRecords() int64 }); ok {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sketchd_store_unreadable_records_total",
			Help: "Stored sketch records skipped because they could not be decoded (at start and when listing); the log names each.",
		}, func() float64 { return float64(u.UnreadableRecords()) }))
	}
	if c, ok := db.(interface{ ChecksumFailures() int64 }); ok {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sketchd_store_checksum_failures_total",
			Help: "Stored records whose checksum did not match their bytes, counted each time one was read (at start, when listing, on a read of it); the log names each, and reads of it answer 500.",
		}, func() float64 { return float64(c.ChecksumFailures()) }))
	}

	auth := cfg.auth
	if auth != nil {
		go reloadOnHangup(ctx, cfg, auth, log)
	}
	srv := server.New(server.Config{
		MaxBody: cfg.maxBody, MaxQueryBody: cfg.maxQueryBody, MaxBodyMemory: cfg.maxBodyMemory, BodyTimeout: cfg.bodyTimeout,
		MaxIDs: cfg.maxIDs, MaxInflightWrites: cfg.maxInflightWrites, AuthMetrics: cfg.authMetrics,
		MaxSeriesBuckets: cfg.maxSeriesBuckets, MaxSeriesPoints: cfg.maxSeriesPoints,
	}, server.Deps{
		Store: db, Metrics: m, Logger: log, Auth: auth,
		MetricsHandler: metrics.Handler(reg, log), OpenAPI: api.Spec(),
	})

	if ss, ok := any(db).(server.SeriesStore); ok {
		go expireSeries(ctx, ss, m, log, cfg.retentionInterval)
	}
	if xs, ok := any(db).(server.ExpiryStore); ok {
		go expireSketches(ctx, xs, log, cfg.retentionInterval)
	}

	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "backend", backendName(cfg), "version", buildVersion(), "auth", auth != nil)
	if auth == nil && !loopback(ln.Addr()) {
		log.Warn("the API is open to anyone who can reach "+ln.Addr().String()+": no -auth-tokens; pass -auth-tokens, or -addr 127.0.0.1:8080 to listen on loopback only",
			"addr", ln.Addr().String())
	}

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// /readyz answers 503 from now on; requests are still served for the
	// drain delay, so a load balancer sees the node leave before its
	// listener closes.
	srv.Drain()
	if drainDelay != cfg.drainDelay {
		log.Info("shutting down: /readyz answers 503; no drain delay, because stdin is a terminal (-drain-delay sets one)", "drain_delay", drainDelay)
	} else {
		log.Info("shutting down: /readyz answers 503", "drain_delay", drainDelay)
	}
	time.Sleep(drainDelay)
	log.Info("shutting down: closing the listener and draining requests")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn("requests still running at the shutdown timeout", "err", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// store is what run needs of a backend: the contract, the metrics'
// scrape-time source, and Close.
type store interface {
	server.Store
	metrics.Source
	Close() error
}

// openStore opens the backend cfg picks: PostgreSQL with -postgres, else
// the embedded bbolt file.
func openStore(ctx context.Context, cfg config, log *slog.Logger, obs *observer) (store, error) {
	if cfg.postgres != "" {
		octx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return postgres.Open(octx, cfg.postgres, postgres.Options{
			MaxConns:   int32(cfg.postgresMaxConns),
			CacheBytes: cfg.cacheBytes,
			KeyWindow:  cfg.keyWindow,
			KeyBytes:   cfg.keyBytes,
			Logger:     log,
			Observer:   obs,
		})
	}
	return bolt.Open(cfg.data, bolt.Options{
		CommitInterval:     cfg.commitInterval,
		CheckpointInterval: cfg.checkpointInterval,
		CacheBytes:         cfg.cacheBytes,
		RecoverPastDamage:  cfg.recoverPastDamage,
		KeyWindow:          cfg.keyWindow,
		KeyBytes:           cfg.keyBytes,
		Logger:             log,
		Observer:           obs,
	})
}

// backendName says where the sketches live, for the start-up log line
// (never the connection string, which may hold a password).
func backendName(cfg config) string {
	if cfg.postgres != "" {
		return "postgres"
	}
	return "bolt " + cfg.data
}

func newLogger(cfg config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.logLevel}
	if cfg.logFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// observer forwards the store's timings to the metrics once they exist.
type observer struct {
	m atomic.Pointer[metrics.Metrics]
}

func (o *observer) ObserveCommit(requests, bytes int, d time.Duration) {
	o.m.Load().ObserveCommit(requests, bytes, d)
}

func (o *observer) ObserveDBCommit(requests, rows int, d time.Duration) {
	o.m.Load().ObserveDBCommit(requests, rows, d)
}

func (o *observer) ObserveCheckpoint(sketches int, d time.Duration) {
	o.m.Load().ObserveCheckpoint(sketches, d)
}

// expireSeries removes series buckets past their retention every interval
// until ctx ends.
func expireSeries(ctx context.Context, ss server.SeriesStore, m *metrics.Metrics, log *slog.Logger, interval time.Duration) {
	every(ctx, interval, func() {
		x, err := ss.ExpireSeries(ctx, time.Now())
		m.SeriesExpired(x.Buckets, x.Bytes)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("removing expired series buckets failed", "err", err)
		case x.Buckets > 0:
			log.Info("removed expired series buckets", "buckets", x.Buckets, "bytes", x.Bytes)
		}
	})
}

// every runs fn every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, fn func()) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		fn()
	}
}

// expireSketches removes expired sketches every interval until ctx ends
// (they are gone for readers and writers from the moment they expire).
func expireSketches(ctx context.Context, xs server.ExpiryStore, log *slog.Logger, interval time.Duration) {
	every(ctx, interval, func() {
		n, err := xs.ExpireSketches(ctx, time.Now())
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("removing expired sketches failed", "err", err)
		case n > 0:
			log.Info("removed expired sketches", "sketches", n)
		}
	})
}

// reloadOnHangup reloads the token file on SIGHUP. A failed reload leaves
// no token valid (server.Auth fails closed), and says why.
func reloadOnHangup(ctx context.Context, cfg config, auth *server.Auth, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if n, err := auth.Reload(); err != nil {
				log.Error("reloading tokens failed: every request that needs a token is refused until a reload succeeds", "err", err)
			} else if n == 0 {
				log.Warn("reloaded tokens: the token file holds none, so every request that needs a token is refused", "file", cfg.authTokens)
			} else {
				log.Info("reloaded tokens", "tokens", n)
			}
		}
	}
}

// loopback reports whether addr is a loopback address, reachable only
// from this machine.
func loopback(addr net.Addr) bool {
	a, ok := addr.(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// revisionOrHint is the revision -version prints: the build's, or, when
// it has none (go run and go test, -buildvcs=false, a tree without .git
// such as the Docker build's), how to give it one.
func revisionOrHint(s string) string {
	if s == "" {
		return `unknown (this build has no VCS stamp: build with go build in a git checkout, or set it with -ldflags "-X main.revision=$(git rev-parse HEAD)")`
	}
	return s
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "dev"
}

func buildRevision() string {
	if revision != "" {
		return revision
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}

// serveDebug serves the profiler on its own listener, apart from the API
// (and its auth), until ctx ends.
func serveDebug(ctx context.Context, addr string, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	log.Info("serving pprof", "addr", ln.Addr().String())
	return nil
}
