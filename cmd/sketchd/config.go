package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sketchd/sketchd/internal/certs"
	"github.com/sketchd/sketchd/internal/server"
)

// config is sketchd's configuration: flag > SKETCHD_<FLAG> > default.
type config struct {
	addr               string
	data               string
	authTokens         string
	authMetrics        bool
	maxBody            int64
	maxQueryBody       int64
	maxBodyMemory      int64
	bodyTimeout        time.Duration
	readTimeout        time.Duration
	writeTimeout       time.Duration
	drainDelay         time.Duration
	maxIDs             int
	maxInflightWrites  int
	maxSeriesBuckets   int
	maxSeriesPoints    int
	maxRankCandidates  int
	commitInterval     time.Duration
	checkpointInterval time.Duration
	retentionInterval  time.Duration
	cacheBytes         int64
	shutdownTimeout    time.Duration
	logLevel           slog.Level
	logFormat          string
	debugAddr          string
	postgres           string
	postgresMaxConns   int
	postgresRankOnNode bool
	recoverPastDamage  bool
	keyWindow          time.Duration
	keyBytes           int64
	metricQuantiles    quantileList
	tlsCert            string
	tlsKey             string
	tlsClientCA        string

	// drainDelaySet says -drain-delay (or SKETCHD_DRAIN_DELAY) was given:
	// only then does a terminal's Ctrl-C wait for it.
	drainDelaySet bool
	// help and version ask for usage or build information instead of a
	// server.
	help, version bool
	// auth is the token file's content, loaded with the rest of the
	// configuration so that a bad file stops sketchd before it touches
	// its data.
	auth *server.Auth
	// tls is the certificate and key (and client CAs) when -tls-cert is
	// given, loaded and checked with the rest for the same reason.
	tls *certs.Files
}

const usageHeader = `Usage: sketchd [flags]
       sketchd check [-data FILE]    check a stopped store offline (sketchd check -h)
       sketchd backup -url URL -o FILE          save a running server's backup archive
       sketchd restore -i FILE (-data FILE | -postgres DSN)   load one into a stopped store
       sketchd copy -from (FILE | DSN) -to (FILE | DSN)       move a stopped store to an empty one

sketchd serves named sketches over HTTP: HyperLogLog (hll, in
postgresql-hll's format), Count-Min (cms), Apache DataSketches' theta,
frequency (freq), HLL (ds_hll), CPC (cpc) and KLL quantile (kll)
sketches, ZetaSketch's HLL++ (zeta_hll, BigQuery's bytes), airlift's
HyperLogLog (airlift_hll, Trino's and Presto's) and Bloom filters
(bloom), alone or as series over time, durable in a bbolt file (or, with
-postgres, in PostgreSQL, shared by several nodes). With no flags it listens on :8080 (every interface, no
auth) and keeps its data in ./sketchd.db. Every flag also reads
SKETCHD_<FLAG> (upper case, - as _); a flag wins over the environment.

Flags:
`

// parseConfig reads flags and environment and checks everything,
// including the token file, so that a mistake stops sketchd before it
// opens its data. On -h it writes the usage to usage and returns a config
// with help set; with -version, one with version set.
func parseConfig(args []string, getenv func(string) string, usage io.Writer) (config, error) {
	c := config{}
	fs := newFlagSet(&c)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.help = true
			fmt.Fprint(usage, usageHeader)
			fs.SetOutput(usage)
			// The usage names each flag's type from its own Value.
			fs.VisitAll(func(f *flag.Flag) {
				if e, ok := f.Value.(explained); ok {
					f.Value = e.Value
				}
			})
			fs.PrintDefaults()
			return c, nil
		}
		return c, fmt.Errorf("%w (sketchd -h lists the flags)", err)
	}
	if c.version {
		return c, nil
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		env := envName(f.Name)
		if v := getenv(env); v != "" && !set[f.Name] {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q (for -%s): %v", env, v, f.Name, err))
			}
			set[f.Name] = true
		}
	})
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	c.drainDelaySet = set["drain-delay"]
	// A query body is never allowed more than the largest body.
	c.maxQueryBody = min(c.maxQueryBody, c.maxBody)
	if err := c.validate(); err != nil {
		return c, err
	}
	if c.authTokens != "" {
		auth, err := server.LoadAuth(c.authTokens)
		if err != nil {
			return c, err
		}
		c.auth = auth
	}
	if c.tlsCert != "" {
		files, err := certs.Load(c.tlsCert, c.tlsKey, c.tlsClientCA)
		if err != nil {
			return c, err
		}
		c.tls = files
	}
	return c, nil
}

// envName is the environment variable a flag falls back to.
func envName(flagName string) string {
	return "SKETCHD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// newFlagSet defines sketchd's flags over c, each with its default.
func newFlagSet(c *config) *flag.FlagSet {
	def := server.DefaultConfig()
	fs := flag.NewFlagSet("sketchd", flag.ContinueOnError)
	// Usage is printed by run on -h (to stdout, exit 0); a bad flag is
	// an error that names it.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&c.addr, "addr", ":8080", "listen address")
	fs.StringVar(&c.data, "data", "sketchd.db", "bbolt data file (its write-ahead log lives beside it in <data>.wal/)")
	fs.StringVar(&c.authTokens, "auth-tokens", "", "file of \"token role\" lines: a token of at least 16 characters without spaces, role read, write or admin (admin may also set \"metric\": true), then optionally prefix=P fields limiting a read or write token to the sketches and series whose names start with one of them; # starts a comment; reread on SIGHUP, and a file emptied, deleted or broken then refuses every token. Empty leaves the API open")
	fs.BoolVar(&c.authMetrics, "auth-metrics", false, "require a read token for /metrics too (with -auth-tokens), one not limited to prefixes")
	fs.Int64Var(&c.maxBody, "max-body", def.MaxBody, "largest request body of add, events and raw uploads, in bytes")
	fs.Int64Var(&c.maxQueryBody, "max-query-body", def.MaxQueryBody, "largest request body of create, union, intersection, overlap, rank, frequency and fold, in bytes")
	fs.Int64Var(&c.maxBodyMemory, "max-body-memory", def.MaxBodyMemory, "memory all request bodies in progress may hold together, in bytes; beyond it a request gets 503")
	fs.DurationVar(&c.bodyTimeout, "body-timeout", def.BodyTimeout, "how long a request body may take to arrive before the request gets 408")
	fs.DurationVar(&c.readTimeout, "read-timeout", def.ReadTimeout, "each read request's deadline, from its arrival (body, queueing and the store's work included; with -postgres, queries still running are cancelled); past it the answer is 503 with Retry-After")
	fs.DurationVar(&c.writeTimeout, "write-timeout", def.WriteTimeout, "each write request's deadline, from its arrival (body, time queued for a commit, and the commit included; with -postgres, the transaction is cancelled); past it the answer is 503 with Retry-After, and the write may or may not have been applied: retry it with its Idempotency-Key")
	fs.IntVar(&c.maxIDs, "max-ids", def.MaxIDs, "most ids, items or events in one request")
	fs.IntVar(&c.maxInflightWrites, "max-inflight-writes", def.MaxInflightWrites, "concurrent write requests before answering 503")
	fs.IntVar(&c.maxSeriesBuckets, "max-series-buckets", def.MaxSeriesBuckets, "most series buckets one request may plan, over all its ranges (every unexpired bucket of every kept level inside a range; a line's windows at its level); beyond it the answer is 422. Only stored buckets are read")
	fs.IntVar(&c.maxRankCandidates, "max-rank-candidates", def.MaxRankCandidates, "most candidates one POST /v1/rank compares with its target (a prefix matching more, or a longer list, is refused with 413 before any is read)")
	fs.IntVar(&c.maxSeriesPoints, "max-series-points", def.MaxSeriesPoints, "most points of a series timeseries, and most buckets a ?buckets=true answer lists; beyond it the answer is 422")
	fs.DurationVar(&c.commitInterval, "commit-interval", 500*time.Microsecond, "how long a log sync waits for concurrent writers to join it, like PostgreSQL's commit_delay (a lone writer never waits; 0: never wait)")
	fs.DurationVar(&c.checkpointInterval, "checkpoint-interval", 30*time.Second, "longest time between checkpoints of the log into bbolt")
	fs.DurationVar(&c.retentionInterval, "retention-interval", time.Minute, "how often expired series buckets are removed")
	fs.Int64Var(&c.cacheBytes, "cache-bytes", 512<<20, "memory for decoded sketches, in bytes")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 20*time.Second, "how long shutdown waits for requests in flight")
	fs.DurationVar(&c.drainDelay, "drain-delay", 5*time.Second, "on SIGTERM or SIGINT, how long /readyz answers 503 while requests are still served, before the listener closes")
	fs.TextVar(&c.logLevel, "log-level", slog.LevelInfo, "debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", "", "json or text (default text when stderr is a terminal, json otherwise)")
	fs.StringVar(&c.postgres, "postgres", "", "keep sketches in this PostgreSQL database (a libpq connection string or URL; needs the hll extension) instead of -data, so several nodes can share them")
	fs.IntVar(&c.postgresMaxConns, "postgres-max-conns", 8, "most connections this node opens to PostgreSQL (with -postgres)")
	fs.BoolVar(&c.postgresRankOnNode, "postgres-rank-on-node", false, "with -postgres, a rank reads every candidate on this node even where the sketchd_hll extension (pg/sketchd_hll) would compare them with the target on the database")
	fs.BoolVar(&c.recoverPastDamage, "recover-past-damage", false, "start although the write-ahead log is damaged or does not match the data file: replay up to the damage, keep damaged log segments aside as *.damaged and log what was dropped (acknowledged writes are lost; use once, after reading the refusal)")
	fs.DurationVar(&c.keyWindow, "idempotency-window", 24*time.Hour, "how long an Idempotency-Key is remembered after its write, so a retry with it replays the answer")
	fs.Int64Var(&c.keyBytes, "idempotency-max-bytes", 256<<20, "memory (bbolt) or table space (PostgreSQL) for the Idempotency-Keys kept, with their answers, in bytes; past it the oldest are dropped before their window ends")
	c.metricQuantiles = quantileList{0.5, 0.9, 0.99}
	fs.Var(&c.metricQuantiles, "metric-quantiles", "comma-separated fractions in [0, 1] (at most 10) that each KLL sketch created with \"metric\": true exports on /metrics as sketchd_sketch_quantile{quantile=...}; empty exports none")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "serve HTTPS (HTTP/2 and HTTP/1.1, TLS 1.2 or later) with the certificate chain in this PEM file, the leaf first (needs -tls-key); reread on SIGHUP, and a reload that fails keeps the certificate served before")
	fs.StringVar(&c.tlsKey, "tls-key", "", "the private key of -tls-cert, in a PEM file (PKCS #1, PKCS #8 or SEC 1)")
	fs.StringVar(&c.tlsClientCA, "tls-client-ca", "", "mutual TLS: require every client to present a certificate that a CA in this PEM file signed (with -tls-cert); reread on SIGHUP")
	fs.StringVar(&c.debugAddr, "debug-addr", "", "serve net/http/pprof on this separate address (empty: off); never expose it")
	fs.BoolVar(&c.version, "version", false, "print the version, VCS revision and Go version, and exit")
	explainValues(fs)
	return fs
}

func (c config) validate() error {
	switch {
	case c.data == "":
		return errors.New("-data must name a file")
	case c.maxBody < 1024:
		return fmt.Errorf("-max-body %d is below 1024 bytes", c.maxBody)
	case c.maxQueryBody < 1024:
		return fmt.Errorf("-max-query-body %d is below 1024 bytes", c.maxQueryBody)
	case c.maxBodyMemory < c.maxBody+1:
		return fmt.Errorf("-max-body-memory %d must exceed -max-body %d, or no body of the largest size could be read", c.maxBodyMemory, c.maxBody)
	case c.bodyTimeout <= 0:
		return fmt.Errorf("-body-timeout %v must be positive", c.bodyTimeout)
	case c.readTimeout <= 0:
		return fmt.Errorf("-read-timeout %v must be positive", c.readTimeout)
	case c.writeTimeout <= 0:
		return fmt.Errorf("-write-timeout %v must be positive", c.writeTimeout)
	case c.drainDelay < 0:
		return fmt.Errorf("-drain-delay %v must not be negative", c.drainDelay)
	case c.maxIDs < 1:
		return fmt.Errorf("-max-ids %d must be positive", c.maxIDs)
	case c.maxInflightWrites < 1:
		return fmt.Errorf("-max-inflight-writes %d must be positive", c.maxInflightWrites)
	case c.maxSeriesBuckets < 1:
		return fmt.Errorf("-max-series-buckets %d must be positive", c.maxSeriesBuckets)
	case c.maxRankCandidates < 1:
		return fmt.Errorf("-max-rank-candidates %d must be positive", c.maxRankCandidates)
	case c.maxSeriesPoints < 1:
		return fmt.Errorf("-max-series-points %d must be positive", c.maxSeriesPoints)
	case c.commitInterval < 0 || c.commitInterval > time.Second:
		return fmt.Errorf("-commit-interval %v must be between 0 and 1s", c.commitInterval)
	case c.checkpointInterval < 100*time.Millisecond:
		return fmt.Errorf("-checkpoint-interval %v is below 100ms", c.checkpointInterval)
	case c.retentionInterval < time.Second:
		return fmt.Errorf("-retention-interval %v is below 1s", c.retentionInterval)
	case c.cacheBytes < 1<<20:
		return fmt.Errorf("-cache-bytes %d is below 1 MiB", c.cacheBytes)
	case c.shutdownTimeout <= 0:
		return fmt.Errorf("-shutdown-timeout %v must be positive", c.shutdownTimeout)
	case c.logFormat != "" && c.logFormat != "json" && c.logFormat != "text":
		return fmt.Errorf("-log-format %q must be json or text", c.logFormat)
	case c.postgresMaxConns < 2 || c.postgresMaxConns > 1000:
		return fmt.Errorf("-postgres-max-conns %d must be between 2 and 1000", c.postgresMaxConns)
	case c.keyWindow < time.Second:
		return fmt.Errorf("-idempotency-window %v is below 1s", c.keyWindow)
	case c.keyBytes < 1<<20:
		return fmt.Errorf("-idempotency-max-bytes %d is below 1 MiB", c.keyBytes)
	case c.authMetrics && c.authTokens == "":
		return errors.New("-auth-metrics needs -auth-tokens")
	case c.tlsCert != "" && c.tlsKey == "":
		return errors.New("-tls-key is missing: -tls-cert needs the certificate's private key (a PEM file)")
	case c.tlsKey != "" && c.tlsCert == "":
		return errors.New("-tls-cert is missing: -tls-key needs the certificate it belongs to (a PEM file)")
	case c.tlsClientCA != "" && c.tlsCert == "":
		return errors.New("-tls-client-ca needs -tls-cert and -tls-key: mutual TLS is TLS first")
	}
	return nil
}

// quantileList is -metric-quantiles: fractions in [0, 1], at most 10.
type quantileList []float64

func (l *quantileList) String() string {
	parts := make([]string, len(*l))
	for i, q := range *l {
		parts[i] = strconv.FormatFloat(q, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

func (l *quantileList) Set(v string) error {
	var out quantileList
	if strings.TrimSpace(v) != "" {
		for _, p := range strings.Split(v, ",") {
			q, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || !(q >= 0 && q <= 1) {
				return fmt.Errorf("%q is not a fraction in [0, 1]; want a comma-separated list like 0.5,0.9,0.99", p)
			}
			out = append(out, q)
		}
	}
	if len(out) > 10 {
		return fmt.Errorf("%d fractions; at most 10", len(out))
	}
	*l = out
	return nil
}

// explained wraps a flag's Value so that a value it cannot parse gets an
// error saying what is expected (the flag package says only "parse
// error"), for flags and SKETCHD_ variables alike.
type explained struct {
	flag.Value
	want string
}

func (e explained) Set(s string) error {
	if err := e.Value.Set(s); err != nil {
		if err.Error() == "parse error" {
			return fmt.Errorf("want %s", e.want)
		}
		return fmt.Errorf("%v; want %s", err, e.want)
	}
	return nil
}

// IsBoolFlag keeps -flag (without =true) working for booleans.
func (e explained) IsBoolFlag() bool {
	b, ok := e.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// explainValues wraps every flag of fs whose values can be malformed.
func explainValues(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok {
			return
		}
		var want string
		switch g.Get().(type) {
		case time.Duration:
			want = "a duration with a unit, such as 500µs, 5ms, 2s or 1m30s"
		case bool:
			want = "true or false (or 1 or 0)"
		case int, int64:
			want = "a whole number, without a unit (33554432, not 32MiB)"
		case *slog.Level:
			want = "debug, info, warn or error"
		default:
			return
		}
		f.Value = explained{Value: f.Value, want: want}
	})
}

// notSettings are SKETCHD_ variables that are not sketchd's settings but
// the test suite's and its tools' (docs/development.md, "Running the tests"), so
// a sketchd started by a test does not warn about them.
var notSettings = struct {
	prefixes []string
	names    []string
}{
	prefixes: []string{"SKETCHD_REQUIRE_", "SKETCHD_TEST_", "SKETCHD_PG_", "SKETCHD_CITUS_", "SKETCHD_BATCHER_"},
	names:    []string{"SKETCHD_TSCLIENT_DIR", "SKETCHD_CHROMIUM", "SKETCHD_SCREENSHOT_DIR", "SKETCHD_DAMAGE_SEEDS", "SKETCHD_HOSTILE_SCALE", "SKETCHD_BIG_SKETCHES"},
}

// unknownSettings returns a warning for each SKETCHD_ variable in environ
// (the process's KEY=value pairs) that no flag reads (a misspelt
// SKETCHD_ADRR would otherwise be ignored without a word), suggesting the
// closest setting's name.
func unknownSettings(environ []string) []string {
	known := map[string]bool{}
	var names []string
	newFlagSet(&config{}).VisitAll(func(f *flag.Flag) {
		n := envName(f.Name)
		known[n] = true
		names = append(names, n)
	})
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "SKETCHD_") || known[k] || slices.Contains(notSettings.names, k) ||
			slices.ContainsFunc(notSettings.prefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			continue
		}
		msg := k + " is not a sketchd setting and is ignored"
		best, bestD := "", 3
		for _, n := range names {
			if d := editDistance(k, n); d < bestD {
				best, bestD = n, d
			}
		}
		if best != "" {
			msg += "; did you mean " + best + "?"
		} else {
			msg += " (sketchd -h lists the flags; each reads SKETCHD_<FLAG>)"
		}
		out = append(out, msg)
	}
	slices.Sort(out)
	return out
}

// editDistance is the Levenshtein distance between a and b, bytes
// inserted, deleted or replaced (both are ASCII names).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
