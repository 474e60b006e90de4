package main

import (
	"github.com/sketchd/sketchd/internal/sketch"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigDefaults(t *testing.T) {
	c, err := parseConfig(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.addr != ":8080" || c.data != "sketchd.db" || c.logLevel != slog.LevelInfo || c.authTokens != "" {
		t.Errorf("defaults = %+v, want :8080, sketchd.db, info, no auth", c)
	}
	if c.keyWindow != 24*time.Hour || c.keyBytes != 256<<20 {
		t.Errorf("idempotency defaults = %v, %d; want 24h, 256 MiB", c.keyWindow, c.keyBytes)
	}
	if c.metricQuantiles.String() != "0.5,0.9,0.99" {
		t.Errorf("-metric-quantiles defaults to %s", c.metricQuantiles.String())
	}
	c, err = parseConfig([]string{"-metric-quantiles", "0.25, 0.75"}, env(map[string]string{"SKETCHD_METRIC_QUANTILES": "0.5"}), io.Discard)
	if err != nil || c.metricQuantiles.String() != "0.25,0.75" {
		t.Errorf("-metric-quantiles 0.25,0.75 = %v, %v", c.metricQuantiles, err)
	}
	if c, err = parseConfig(nil, env(map[string]string{"SKETCHD_METRIC_QUANTILES": ""}), io.Discard); err != nil || len(c.metricQuantiles) != 3 {
		t.Errorf("an empty SKETCHD_METRIC_QUANTILES = %v, %v", c.metricQuantiles, err)
	}
	if c, err = parseConfig([]string{"-metric-quantiles", ""}, env(nil), io.Discard); err != nil || len(c.metricQuantiles) != 0 {
		t.Errorf("-metric-quantiles= = %v, %v; want none", c.metricQuantiles, err)
	}
}

// TestConfigPrecedence: a flag beats SKETCHD_<FLAG>, which beats the default.
func TestConfigPrecedence(t *testing.T) {
	e := env(map[string]string{
		"SKETCHD_ADDR":            "127.0.0.1:9000",
		"SKETCHD_DATA":            "/tmp/x.db",
		"SKETCHD_LOG_LEVEL":       "debug",
		"SKETCHD_COMMIT_INTERVAL": "2ms",
		"SKETCHD_MAX_BODY":        "4096",
	})
	c, err := parseConfig([]string{"-data", "/tmp/flag.db"}, e, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.addr != "127.0.0.1:9000" || c.data != "/tmp/flag.db" || c.logLevel != slog.LevelDebug ||
		c.commitInterval != 2*time.Millisecond || c.maxBody != 4096 {
		t.Errorf("config = %+v", c)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-max-body", "10"}, nil, "-max-body"},
		{[]string{"-log-format", "xml"}, nil, "-log-format"},
		{[]string{"-auth-metrics"}, nil, "-auth-tokens"},
		{[]string{"extra"}, nil, "unexpected argument"},
		{nil, map[string]string{"SKETCHD_MAX_IDS": "many"}, "SKETCHD_MAX_IDS"},
		{nil, map[string]string{"SKETCHD_LOG_LEVEL": "loud"}, "SKETCHD_LOG_LEVEL"},
		{[]string{"-commit-interval", "5s"}, nil, "-commit-interval"},
		{[]string{"-nope"}, nil, "flag provided but not defined"},
		{[]string{"-postgres", "host=db", "-postgres-max-conns", "1"}, nil, "-postgres-max-conns"},
		{nil, map[string]string{"SKETCHD_POSTGRES_MAX_CONNS": "lots"}, "SKETCHD_POSTGRES_MAX_CONNS"},
		{[]string{"-max-query-body", "100"}, nil, "-max-query-body"},
		{[]string{"-max-body-memory", "1024"}, nil, "-max-body-memory"},
		{[]string{"-body-timeout", "0s"}, nil, "-body-timeout"},
		{[]string{"-drain-delay", "-1s"}, nil, "-drain-delay"},
		{[]string{"-max-series-buckets", "0"}, nil, "-max-series-buckets"},
		{[]string{"-max-rank-candidates", "0"}, nil, "-max-rank-candidates"},
		{nil, map[string]string{"SKETCHD_MAX_SERIES_POINTS": "-3"}, "-max-series-points"},
		{[]string{"-idempotency-window", "0s"}, nil, "-idempotency-window"},
		{[]string{"-idempotency-max-bytes", "1000"}, nil, "-idempotency-max-bytes"},
		{nil, map[string]string{"SKETCHD_IDEMPOTENCY_WINDOW": "a day"}, "SKETCHD_IDEMPOTENCY_WINDOW"},
		{[]string{"-metric-quantiles", "0.5,1.5"}, nil, `"1.5" is not a fraction in [0, 1]`},
		{nil, map[string]string{"SKETCHD_METRIC_QUANTILES": "p99"}, "SKETCHD_METRIC_QUANTILES"},
		{[]string{"-metric-quantiles", "0,.1,.2,.3,.4,.5,.6,.7,.8,.9,1"}, nil, "at most 10"},
	}
	for _, tt := range tests {
		_, err := parseConfig(tt.args, env(tt.env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseConfig(%v, %v) = %v, want an error mentioning %s", tt.args, tt.env, err, tt.want)
		}
	}
}

// TestConfigPostgres: SKETCHD_POSTGRES picks the PostgreSQL backend as
// -postgres does, and without either the backend stays the bbolt file.
func TestConfigPostgres(t *testing.T) {
	c, err := parseConfig(nil, env(map[string]string{"SKETCHD_POSTGRES": "host=db dbname=sketchd"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.postgres != "host=db dbname=sketchd" || backendName(c) != "postgres" || c.postgresMaxConns != 8 {
		t.Errorf("SKETCHD_POSTGRES gave postgres %q, backend %q, max conns %d", c.postgres, backendName(c), c.postgresMaxConns)
	}
	c, err = parseConfig(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.postgres != "" || backendName(c) != "bolt sketchd.db" {
		t.Errorf("without -postgres the backend is %q", backendName(c))
	}
}

// TestConfigSaysWhatIsExpected: a value a flag or SKETCHD_ variable cannot
// parse gets an error naming the flag and what it takes, not the flag
// package's bare "parse error".
func TestConfigSaysWhatIsExpected(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want []string
	}{
		{[]string{"-commit-interval", "5"}, nil, []string{"-commit-interval", "a duration with a unit, such as 500µs, 5ms"}},
		{nil, map[string]string{"SKETCHD_COMMIT_INTERVAL": "5"}, []string{"SKETCHD_COMMIT_INTERVAL", "-commit-interval", "a duration"}},
		{nil, map[string]string{"SKETCHD_AUTH_METRICS": "yes"}, []string{"SKETCHD_AUTH_METRICS", "true or false"}},
		{[]string{"-auth-metrics=yes"}, nil, []string{"-auth-metrics", "true or false"}},
		{[]string{"-max-body", "32MiB"}, nil, []string{"-max-body", "a whole number, without a unit"}},
		{nil, map[string]string{"SKETCHD_MAX_IDS": "99999999999999999999"}, []string{"SKETCHD_MAX_IDS", "out of range", "a whole number"}},
		{[]string{"-log-level", "loud"}, nil, []string{"-log-level", "debug, info, warn or error"}},
	} {
		_, err := parseConfig(tt.args, env(tt.env), io.Discard)
		if err == nil {
			t.Errorf("parseConfig(%v, %v) succeeded, want an error", tt.args, tt.env)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("parseConfig(%v, %v) = %q, want it to mention %q", tt.args, tt.env, err, w)
			}
		}
		if strings.Contains(err.Error(), "parse error") {
			t.Errorf("parseConfig(%v, %v) = %q: says only \"parse error\"", tt.args, tt.env, err)
		}
	}
	// The wrapped values still parse what they took before, booleans
	// given as a bare flag included.
	c, err := parseConfig([]string{"-recover-past-damage", "-commit-interval", "2ms", "-log-level", "debug"}, env(map[string]string{"SKETCHD_MAX_IDS": "10"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !c.recoverPastDamage || c.commitInterval != 2*time.Millisecond || c.logLevel != slog.LevelDebug || c.maxIDs != 10 {
		t.Errorf("config = %+v", c)
	}
	// -h still names each flag's type.
	var usage strings.Builder
	if _, err := parseConfig([]string{"-h"}, env(nil), &usage); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"-commit-interval duration", "-max-body int", "-log-level value"} {
		if !strings.Contains(usage.String(), w) {
			t.Errorf("-h does not show %q:\n%s", w, usage.String())
		}
	}
	// Its introduction names every kind sketchd keeps by its type.
	intro, _, _ := strings.Cut(usage.String(), "Flags:")
	for _, k := range sketch.Kinds() {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(string(k.Type)) + `\b`).MatchString(intro) {
			t.Errorf("-h's introduction does not name %s:\n%s", k.Type, intro)
		}
	}
}

// TestUnknownSettings: a SKETCHD_ variable no flag reads is warned about,
// with the closest setting when there is one; the settings themselves and
// the test suite's variables are not.
func TestUnknownSettings(t *testing.T) {
	got := unknownSettings([]string{
		"SKETCHD_ADRR=127.0.0.1:9000", "SKETCHD_ADDR=:8080", "SKETCHD_MAX_BODY=4096",
		"SKETCHD_REQUIRE_PG=1", "SKETCHD_PG_DSN=host=x", "SKETCHD_CHROMIUM=/bin/true",
		"SKETCHD_WHATEVER_THIS_IS=1", "HOME=/root", "SKETCHD_LOG_LEVLE=debug",
	})
	want := []string{
		"SKETCHD_ADRR is not a sketchd setting and is ignored; did you mean SKETCHD_ADDR?",
		"SKETCHD_LOG_LEVLE is not a sketchd setting and is ignored; did you mean SKETCHD_LOG_LEVEL?",
		"SKETCHD_WHATEVER_THIS_IS is not a sketchd setting and is ignored (sketchd -h lists the flags; each reads SKETCHD_<FLAG>)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("unknownSettings =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
