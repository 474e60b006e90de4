package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"testing"
)

// TestServeDiscard runs the load generator against its own read-ceiling
// server, in the formats the ingest figures compare: every request
// succeeds and counts its ids.
func TestServeDiscard(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serveDiscard(ctx, ln, io.Discard) }()
	for _, format := range []string{"octet", "json"} {
		var out bytes.Buffer
		err := run(context.Background(), []string{"-target", "http://" + ln.Addr().String(), "-create", "-requests", "40",
			"-batch", "50000", "-c", "2", "-format", format, "-prebuilt", "0", "-json", "-progress", "0"}, &out, io.Discard)
		if err != nil {
			t.Fatalf("-format %s against -serve-discard: %v", format, err)
		}
		var res struct {
			OKRequests int64 `json:"ok_requests"`
			IDs        int64 `json:"ids"`
		}
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatal(err)
		}
		if res.OKRequests != 40 || res.IDs != 40*50000 {
			t.Errorf("-format %s: %d requests ok, %d ids; want 40 and %d", format, res.OKRequests, res.IDs, 40*50000)
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serveDiscard: %v", err)
	}
}
