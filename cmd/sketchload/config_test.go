package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		c, err := parseConfig(nil, io.Discard)
		if err != nil {
			t.Fatalf("parseConfig(): %v", err)
		}
		if c.target != "http://127.0.0.1:8080" || c.conc != 8 || c.batch != 10000 || c.duration != 10*time.Second ||
			c.format != formatOctet || c.dist != distUniform || c.prebuilt != 105 || c.create {
			t.Errorf("defaults = %+v", c)
		}
	})
	t.Run("redis defaults", func(t *testing.T) {
		t.Parallel()
		c, err := parseConfig([]string{"-redis", "127.0.0.1:6379"}, io.Discard)
		if err != nil {
			t.Fatalf("parseConfig: %v", err)
		}
		if c.batch != 100 || c.pipeline != 16 || c.prebuilt != 10486 {
			t.Errorf("redis batch %d pipeline %d prebuilt %d, want 100 16 10486", c.batch, c.pipeline, c.prebuilt)
		}
	})
	t.Run("requests alone replaces duration", func(t *testing.T) {
		t.Parallel()
		c, err := parseConfig([]string{"-requests", "5", "-batch", "1"}, io.Discard)
		if err != nil {
			t.Fatalf("parseConfig: %v", err)
		}
		if c.duration != 0 || c.requests != 5 || c.prebuilt != 16384 {
			t.Errorf("duration %v requests %d prebuilt %d, want 0 5 16384", c.duration, c.requests, c.prebuilt)
		}
		c, err = parseConfig([]string{"-requests", "5", "-duration", "1s"}, io.Discard)
		if err != nil || c.duration != time.Second {
			t.Errorf("both given: duration %v err %v, want 1s", c.duration, err)
		}
	})
	t.Run("trailing slash of target", func(t *testing.T) {
		t.Parallel()
		c, err := parseConfig([]string{"-target", "http://h:1/base/"}, io.Discard)
		if err != nil || c.target != "http://h:1/base" {
			t.Errorf("target = %q, %v, want http://h:1/base", c.target, err)
		}
	})
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"-c", "0"}, "-c 0"},
		{[]string{"-redis", "127.0.0.1:6379", "-idempotency-keys"}, "-idempotency-keys"},
		{[]string{"-batch", "-5"}, "-batch -5"},
		{[]string{"-batch", "100000000"}, "-batch 100000000"},
		{[]string{"-pipeline", "0"}, "-pipeline 0"},
		{[]string{"-duration", "0"}, "never end"},
		{[]string{"-requests", "-1"}, "-requests -1"},
		{[]string{"-sketches", "0"}, "-sketches 0"},
		{[]string{"-prefix", "-bad"}, "-prefix"},
		{[]string{"-prefix", strings.Repeat("a", 199)}, "-prefix"},
		{[]string{"-dist", "normal"}, "-dist"},
		{[]string{"-dist", "zipf", "-zipf-s", "1"}, "-zipf-s"},
		{[]string{"-ids", "0"}, "-ids 0"},
		{[]string{"-format", "xml"}, "-format"},
		{[]string{"-pick", "first"}, "-pick"},
		{[]string{"-prebuilt", "100000", "-batch", "10000"}, "in memory"},
		{[]string{"-log2m", "18"}, "-log2m 18"},
		{[]string{"-regwidth", "0"}, "-regwidth 0"},
		{[]string{"-rate", "-1"}, "-rate"},
		{[]string{"-timeout", "0"}, "-timeout"},
		{[]string{"-target", "ftp://x"}, "http://"},
		{[]string{"-target", "http://"}, "no host"},
		{[]string{"-target", "http://h/?a=1"}, "query"},
		{[]string{"-redis", "h:1", "-target", "http://h"}, "exclude"},
		{[]string{"-redis", "h:1", "-create"}, "-create"},
		{[]string{"-token", "a\nb"}, "line breaks"},
		{[]string{"-target", "http://h:1", "-ca-file", "config_test.go"}, "needs an https:// -target"},
		{[]string{"-redis", "h:1", "-ca-file", "config_test.go"}, "-ca-file applies to sketchd"},
		{[]string{"-target", "https://h:1", "-ca-file", "absent.pem"}, "absent.pem"},
		{[]string{"-target", "https://h:1", "-ca-file", "config_test.go"}, "-ca-file config_test.go: no PEM certificate"},
		{[]string{"extra"}, "unexpected argument"},
	}
	for _, tt := range bad {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			_, err := parseConfig(tt.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseConfig(%q) error = %v, want one mentioning %q", tt.args, err, tt.want)
			}
		})
	}
	t.Run("flag errors are usage errors", func(t *testing.T) {
		t.Parallel()
		var stderr strings.Builder
		_, err := parseConfig([]string{"-nope"}, &stderr)
		if !errors.Is(err, ErrUsage) || !strings.Contains(stderr.String(), "Usage: sketchload") {
			t.Errorf("error %v, stderr %q: want ErrUsage and the usage text", err, stderr.String())
		}
		_, err = parseConfig([]string{"-h"}, io.Discard)
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("-h error = %v, want flag.ErrHelp", err)
		}
	})
}

func TestGroupDigits(t *testing.T) {
	t.Parallel()
	tests := map[float64]string{0: "0", 12.34: "12.3", 999: "999", 1000: "1,000", 1234567.8: "1,234,568", -2500: "-2,500"}
	for v, want := range tests {
		if got := groupDigits(v); got != want {
			t.Errorf("groupDigits(%v) = %q, want %q", v, got, want)
		}
	}
}
