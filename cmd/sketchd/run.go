package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
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
	// stderrTerminal says stderr is a terminal: someone is reading the
	// log there, so it is text unless -log-format says otherwise, and
	// backup, restore and copy show their progress there.
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
	log := newLogger(cfg, stderr, h.stderrTerminal)
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
	trim := newTrimmer(log)
	defer trim.stop()
	db, err := openStore(ctx, cfg, log, &obs, trim)
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

	if d, ok := db.(interface{ Dependencies() []postgres.Dependency }); ok {
		reg.MustRegister(dependencyCollector{d.Dependencies})
	}
	if cfg.tls != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sketchd_tls_certificate_expiry_timestamp_seconds",
			Help: "When the TLS certificate served now expires (its NotAfter), in Unix seconds; a SIGHUP that loads a renewed one moves it.",
		}, func() float64 { return float64(cfg.tls.Leaf().NotAfter.Unix()) }))
		warnExpiry(log, cfg.tls.Leaf(), time.Now())
	}

	auth := cfg.auth
	if auth != nil || cfg.tls != nil {
		go reloadOnHangup(ctx, cfg, log)
	}
	srv := server.New(server.Config{
		MaxBody: cfg.maxBody, MaxQueryBody: cfg.maxQueryBody, MaxBodyMemory: cfg.maxBodyMemory, BodyTimeout: cfg.bodyTimeout,
		ReadTimeout: cfg.readTimeout, WriteTimeout: cfg.writeTimeout,
		MaxIDs: cfg.maxIDs, MaxInflightWrites: cfg.maxInflightWrites, AuthMetrics: cfg.authMetrics,
		MaxSeriesBuckets: cfg.maxSeriesBuckets, MaxSeriesPoints: cfg.maxSeriesPoints,
		MaxRankCandidates: cfg.maxRankCandidates,
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
		ErrorLog:          stdlog.New(serverErrors{log}, "", 0),
	}
	served := make(chan error, 1)
	tlsMode := "off"
	if cfg.tls != nil {
		// ServeTLS takes the certificate from the configuration's
		// GetCertificate, so a reload reaches the next handshake; a plain
		// HTTP request to this port gets Go's 400 "Client sent an HTTP
		// request to an HTTPS server" and is never routed.
		hs.TLSConfig = cfg.tls.Config()
		tlsMode = "on"
		if cfg.tls.MutualTLS() {
			tlsMode = "mutual"
		}
		go func() { served <- hs.ServeTLS(ln, "", "") }()
	} else {
		go func() { served <- hs.Serve(ln) }()
	}
	log.Info("listening", "addr", ln.Addr().String(), "tls", tlsMode, "backend", backendName(cfg), "version", buildVersion(), "auth", auth != nil)
	if auth == nil && !loopback(ln.Addr()) {
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		log.Warn("the API is open to anyone who can reach "+ln.Addr().String()+": no -auth-tokens; pass -auth-tokens, or -addr "+net.JoinHostPort("127.0.0.1", port)+" to listen on loopback only",
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
func openStore(ctx context.Context, cfg config, log *slog.Logger, obs *observer, trim *trimmer) (store, error) {
	if cfg.postgres != "" {
		octx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return postgres.Open(octx, cfg.postgres, postgres.Options{
			MaxConns:     int32(cfg.postgresMaxConns),
			RankOnNode:   cfg.postgresRankOnNode,
			CacheBytes:   cfg.cacheBytes,
			WriteTimeout: cfg.writeTimeout,
			KeyWindow:    cfg.keyWindow,
			KeyBytes:     cfg.keyBytes,
			Logger:       log,
			Observer:     obs,
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
		Released:           trim.noteReleased,
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

// newLogger logs to w in -log-format; without it, in text when w is a
// terminal (a person reading) and JSON otherwise (a collector reading).
func newLogger(cfg config, w io.Writer, terminal bool) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.logLevel}
	if cfg.logFormat == "text" || cfg.logFormat == "" && terminal {
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

// reloadOnHangup reloads the token file and the TLS files (whichever are
// configured) on SIGHUP. A failed token reload leaves no token valid
// (server.Auth fails closed); a failed TLS reload keeps the certificate
// served before (certs says why). Either says what failed.
func reloadOnHangup(ctx context.Context, cfg config, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		if auth := cfg.auth; auth != nil {
			if n, err := auth.Reload(); err != nil {
				log.Error("reloading tokens failed: every request that needs a token is refused until a reload succeeds", "err", err)
			} else if n == 0 {
				log.Warn("reloaded tokens: the token file holds none, so every request that needs a token is refused", "file", cfg.authTokens)
			} else {
				log.Info("reloaded tokens", "tokens", n)
			}
		}
		if files := cfg.tls; files != nil {
			old := files.Leaf()
			if err := files.Reload(); err != nil {
				log.Error("reloading the TLS certificate failed: the certificate loaded before is still served",
					"err", err, "serial", old.SerialNumber.String(), "not_after", old.NotAfter.UTC())
				continue
			}
			leaf := files.Leaf()
			log.Info("reloaded the TLS certificate", "serial", leaf.SerialNumber.String(), "subject", leaf.Subject.String(),
				"not_after", leaf.NotAfter.UTC(), "changed", !leaf.Equal(old))
			warnExpiry(log, leaf, time.Now())
		}
	}
}

// warnExpiry warns when the certificate served is not valid at now: TLS
// clients will refuse it until one that is valid is loaded (SIGHUP).
func warnExpiry(log *slog.Logger, leaf *x509.Certificate, now time.Time) {
	switch {
	case now.After(leaf.NotAfter):
		log.Warn("the TLS certificate has expired: clients that verify it refuse to connect; install a renewed one and send SIGHUP",
			"serial", leaf.SerialNumber.String(), "not_after", leaf.NotAfter.UTC())
	case now.Before(leaf.NotBefore):
		log.Warn("the TLS certificate is not valid yet: clients that verify it refuse to connect until then",
			"serial", leaf.SerialNumber.String(), "not_before", leaf.NotBefore.UTC())
	}
}

// serverErrors is the http.Server's error log: each line a warning,
// except a TLS handshake the client closed before sending anything (EOF),
// which is what a TCP probe or a load balancer's check does every few
// seconds; those are debug lines, so a tcpSocket probe does not fill the
// log. A handshake that fails for a reason (a plain HTTP request, a
// client certificate refused) stays a warning.
type serverErrors struct{ log *slog.Logger }

func (e serverErrors) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	level := slog.LevelWarn
	if strings.HasPrefix(msg, "http: TLS handshake error from ") && strings.HasSuffix(msg, ": EOF") {
		level = slog.LevelDebug
	}
	e.log.Log(context.Background(), level, msg)
	return len(p), nil
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

// dependencyUp describes sketchd_store_dependency_up.
var dependencyUp = prometheus.NewDesc("sketchd_store_dependency_up",
	"Whether the last readiness probe (every 5 s, every second while not ready) reached each thing this node needs to commit: the database (the Citus coordinator), and on Citus each worker through the coordinator. /readyz answers 503 while any is 0.",
	[]string{"dependency"}, nil)

// dependencyCollector exports the PostgreSQL store's dependencies.
type dependencyCollector struct {
	deps func() []postgres.Dependency
}

func (c dependencyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- dependencyUp }

func (c dependencyCollector) Collect(ch chan<- prometheus.Metric) {
	for _, d := range c.deps() {
		v := 0.0
		if d.Up {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(dependencyUp, prometheus.GaugeValue, v, d.Name)
	}
}
