package main

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"
)

// Defaults that depend on the mode.
const (
	defaultHTTPBatch  = 10000
	defaultRedisBatch = 100
	// autoPoolIDs is roughly how many ids an automatic prebuilt pool holds:
	// enough that reusing bodies does not make the workload trivially
	// repetitive, small enough to build in a blink (tens of MB at most).
	autoPoolIDs = 1 << 20
	autoPoolMin = 16
	autoPoolMax = 16384
	// maxPoolIDs bounds -prebuilt × -batch before anything is allocated.
	maxPoolIDs = 1 << 27
	maxBatch   = 1 << 24
)

// nameRE is the sketch name grammar of the HTTP contract.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$`)

// config is the parsed and validated command line.
type config struct {
	target   string // base URL without trailing slash (HTTP mode)
	redis    string // host:port (Redis mode when non-empty)
	postgres string // connection string (PostgreSQL mode when non-empty)
	// serveDiscard, when non-empty, makes sketchload the read ceiling
	// server on this address instead of a load generator.
	serveDiscard string
	conc         int
	batch        int
	pipeline     int
	duration     time.Duration // 0 = no time limit
	requests     int64         // 0 = no count limit
	sketches     int
	prefix       string
	random       bool // pick sketches at random instead of round robin
	dist         dist
	zipfS        float64
	ids          uint64
	format       format
	prebuilt     int // bodies built before the clock starts; 0 = build during the run
	create       bool
	log2m        int
	regwidth     int
	token        string
	warmup       time.Duration
	json         bool
	progress     time.Duration
	rate         float64 // requests (Redis: commands) per second; 0 = closed loop
	timeout      time.Duration
	maxBackoff   time.Duration
	seed         uint64
	keys         bool // send an Idempotency-Key with every add
	negative     bool // send -1-id for every id drawn
	// caFile names the PEM file of the CAs an https target's certificate
	// is checked against (instead of the system's); roots holds them.
	caFile string
	roots  *x509.CertPool
}

// names returns the sketch (Redis: key) names the run spreads its load over.
func (c *config) names() []string {
	out := make([]string, c.sketches)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", c.prefix, i)
	}
	return out
}

// parseConfig parses args (without the program name). Usage and flag errors
// go to stderr; -h yields flag.ErrHelp.
func parseConfig(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("sketchload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: sketchload [flags]\n\n"+
			"Drives POST /v1/sketches/{name}/add of a sketchd server (or PFADD of a\n"+
			"redis-server with -redis) and reports ids/s, requests/s and latency.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	c := &config{}
	var distName, formatName, pick string
	fs.StringVar(&c.target, "target", "http://127.0.0.1:8080", "sketchd base `URL`")
	fs.StringVar(&c.redis, "redis", "", "measure a redis-server at `host:port` with PFADD instead of sketchd")
	fs.StringVar(&c.serveDiscard, "serve-discard", "", "instead of sending load, serve HTTP on `addr` (host:port) until SIGINT/SIGTERM, reading every request body to its end and dropping it: the read ceiling to measure sketchd's CPU per id against (scripts/bench-ingest-cpu.sh)")
	fs.StringVar(&c.postgres, "postgres", "", "measure PostgreSQL itself with the same batches as bigint[]: INSERT … hll_add_agg(hll_hash_bigint(x)) … ON CONFLICT … hll_union, into table sketchload_hll of the database this `DSN` names")
	fs.IntVar(&c.conc, "c", 8, "concurrent connections (workers)")
	fs.IntVar(&c.batch, "batch", 0, "ids per request (default 10000; with -redis ids per PFADD, default 100)")
	fs.IntVar(&c.pipeline, "pipeline", 16, "with -redis: PFADD commands pipelined per round trip (like redis-benchmark -P)")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to measure (0 = until -requests are done)")
	fs.Int64Var(&c.requests, "requests", 0, "stop after this many requests (with -redis: PFADD commands); given alone it replaces -duration")
	fs.IntVar(&c.sketches, "sketches", 1, "number of sketch names (Redis keys) to spread the load over")
	fs.StringVar(&c.prefix, "prefix", "load", "sketch names are `prefix`-0, prefix-1, …")
	fs.StringVar(&pick, "pick", "rr", "how a request picks its sketch: rr (round robin) or random")
	fs.StringVar(&distName, "dist", "uniform", "id distribution: uniform, zipf or sequential")
	fs.Float64Var(&c.zipfS, "zipf-s", 1.1, "zipf exponent s (> 1)")
	fs.Uint64Var(&c.ids, "ids", 100_000_000, "id space size: ids are drawn from [0, ids)")
	fs.StringVar(&formatName, "format", "octet", "body format: octet (big-endian int64, the fastest), json, json-text, json-uuid (36-character UUID-like strings), ndjson or text (ignored with -redis)")
	fs.IntVar(&c.prebuilt, "prebuilt", -1, "bodies built before the clock starts and reused round robin; -1 = enough for about 1M ids (16 to 16384 bodies), 0 = build each body during the run.\n"+
		"Reused bodies repeat ids: once a sketch holds them an add changes nothing, and a server may skip the durable write\n"+
		"(Redis does not append a PFADD that changes no register to its AOF). Measure durable writes with 0 (fresh ids)")
	fs.BoolVar(&c.create, "create", false, "create the sketches first (PUT) with -log2m and -regwidth")
	fs.IntVar(&c.log2m, "log2m", 14, "log2m of sketches made by -create")
	fs.IntVar(&c.regwidth, "regwidth", 5, "regwidth of sketches made by -create")
	fs.StringVar(&c.token, "token", "", "bearer token (with -redis: AUTH password)")
	fs.DurationVar(&c.warmup, "warmup", 0, "load run before measuring, not counted")
	fs.BoolVar(&c.json, "json", false, "print the result as JSON")
	fs.DurationVar(&c.progress, "progress", time.Second, "interval of progress lines on stderr (0 = none)")
	fs.Float64Var(&c.rate, "rate", 0, "open loop: requests/s (with -redis: commands/s) on a fixed schedule, latency measured from the intended send time (0 = closed loop, as fast as answers come)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.DurationVar(&c.maxBackoff, "max-backoff", time.Second, "on 503/429 with Retry-After the worker pauses that long, at most this (0 = never pause)")
	fs.Uint64Var(&c.seed, "seed", 1, "random seed (same seed, same ids)")
	fs.StringVar(&c.caFile, "ca-file", "", "with an https:// -target: trust the certificate authorities in this PEM `file` instead of the system's (sketchd serving a certificate of a private CA). Each worker keeps its own HTTP/1.1 connection over TLS, as over plain HTTP")
	fs.BoolVar(&c.negative, "negative", false, "send every id drawn as -1-id (negative ids; with -ids 9223372036854775808, of 19 digits)")
	fs.BoolVar(&c.keys, "idempotency-keys", false, "send a new Idempotency-Key with every add (unique to the run), as the Go client does, to measure what keys cost")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (all options are flags)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["requests"] && !set["duration"] {
		c.duration = 0
	}
	var err error
	if c.dist, err = parseDist(distName); err != nil {
		return nil, err
	}
	if c.format, err = parseFormat(formatName); err != nil {
		return nil, err
	}
	switch pick {
	case "rr":
	case "random":
		c.random = true
	default:
		return nil, fmt.Errorf("-pick %q: want rr or random", pick)
	}
	if c.batch == 0 {
		c.batch = defaultHTTPBatch
		if c.redis != "" {
			c.batch = defaultRedisBatch
		}
	}
	if err := c.validate(set); err != nil {
		return nil, err
	}
	if c.caFile != "" {
		b, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, fmt.Errorf("-ca-file: %w", err)
		}
		c.roots = x509.NewCertPool()
		if !c.roots.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("-ca-file %s: no PEM certificate in it", c.caFile)
		}
	}
	if c.prebuilt < 0 {
		c.prebuilt = min(autoPoolMax, max(autoPoolMin, (autoPoolIDs+c.batch-1)/c.batch))
	}
	return c, nil
}

// validate checks ranges and combinations before anything is allocated.
func (c *config) validate(set map[string]bool) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.redis != "" && c.postgres != "" {
		bad("-redis and -postgres exclude each other")
	}
	if c.postgres != "" && set["target"] {
		bad("-target and -postgres exclude each other")
	}
	if c.redis == "" {
		u, err := url.Parse(c.target)
		switch {
		case err != nil:
			bad("-target %q: %v", c.target, err)
		case u.Scheme != "http" && u.Scheme != "https":
			bad("-target %q: want an http:// or https:// URL", c.target)
		case u.Host == "":
			bad("-target %q: no host", c.target)
		case u.RawQuery != "" || u.Fragment != "":
			bad("-target %q: want a base URL without query or fragment", c.target)
		}
		c.target = strings.TrimRight(c.target, "/")
		if c.caFile != "" && err == nil && u.Scheme != "https" {
			bad("-ca-file needs an https:// -target, not %q", c.target)
		}
	} else if set["target"] {
		bad("-target and -redis exclude each other")
	}
	if c.caFile != "" && (c.redis != "" || c.postgres != "") {
		bad("-ca-file applies to sketchd (-target)")
	}
	if c.conc < 1 || c.conc > 10000 {
		bad("-c %d: want 1..10000", c.conc)
	}
	if c.batch < 1 || c.batch > maxBatch {
		bad("-batch %d: want 1..%d", c.batch, maxBatch)
	}
	if c.pipeline < 1 || c.pipeline > 10000 {
		bad("-pipeline %d: want 1..10000", c.pipeline)
	}
	if c.duration < 0 {
		bad("-duration %v: must not be negative", c.duration)
	}
	if c.requests < 0 {
		bad("-requests %d: must not be negative", c.requests)
	}
	if c.duration == 0 && c.requests == 0 {
		bad("give -duration or -requests: the run would never end")
	}
	if c.sketches < 1 || c.sketches > 1_000_000 {
		bad("-sketches %d: want 1..1000000", c.sketches)
	} else if !nameRE.MatchString(fmt.Sprintf("%s-%d", c.prefix, c.sketches-1)) {
		bad("-prefix %q: names like %s-%d do not match %s", c.prefix, c.prefix, c.sketches-1, nameRE)
	}
	if c.ids < 1 || c.ids > 1<<63 {
		bad("-ids %d: want 1..2^63", c.ids)
	}
	if c.dist == distZipf && !(c.zipfS > 1) {
		bad("-zipf-s %v: must be > 1", c.zipfS)
	}
	if c.prebuilt > 0 && int64(c.prebuilt)*int64(c.batch) > maxPoolIDs {
		bad("-prebuilt %d × -batch %d ids: more than %d ids to hold in memory", c.prebuilt, c.batch, maxPoolIDs)
	}
	if c.log2m < 4 || c.log2m > 17 {
		bad("-log2m %d: want 4..17", c.log2m)
	}
	if c.regwidth < 1 || c.regwidth > 7 {
		bad("-regwidth %d: want 1..7", c.regwidth)
	}
	if c.warmup < 0 || c.progress < 0 || c.timeout <= 0 || c.maxBackoff < 0 {
		bad("-warmup, -progress and -max-backoff must not be negative, -timeout must be positive")
	}
	if c.rate < 0 || c.rate > 1e9 {
		bad("-rate %v: want 0..1e9", c.rate)
	}
	if c.keys && (c.redis != "" || c.postgres != "") {
		bad("-idempotency-keys applies to sketchd (-target)")
	}
	if c.negative && (c.redis != "" || c.postgres != "") {
		bad("-negative applies to sketchd (-target)")
	}
	if c.negative && c.format == formatJSONUUID {
		bad("-negative has no meaning with -format json-uuid")
	}
	if c.redis != "" && c.create {
		bad("-create has no meaning with -redis (PFADD creates keys)")
	}
	if strings.ContainsAny(c.token, "\r\n") {
		bad("-token must not contain line breaks")
	}
	return errors.Join(errs...)
}
