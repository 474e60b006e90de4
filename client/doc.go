// Package client is a Go client for sketchd, for product backends: one
// typed method per route of api/openapi.yaml, problem+json answers as
// *Problem errors, retries with capped, jittered exponential backoff for
// the calls that are safe to repeat, and a Batcher that buffers ids per
// sketch and flushes them in the background.
//
// It uses only the standard library's net/http.
//
//	c, err := client.New("http://localhost:8080", client.WithToken(tok))
//	...
//	_, _, err = c.Create(ctx, "signups", client.CreateRequest{})
//	_, err = c.AddInts(ctx, "signups", []int64{1001, 1002})
//	s, err := c.Describe(ctx, "signups") // s.Cardinality, s.StdError
//	if client.IsNotFound(err) { … }
//
// # TLS
//
// An https base URL works as is against a certificate the system trusts.
// WithCAFile trusts the certificate authorities of a PEM file instead
// (sketchd serving a certificate of a private CA, -tls-cert), and
// WithTLSConfig sets the whole configuration: a client certificate for a
// server that requires one (-tls-client-ca), a ServerName. HTTP/2 is used
// whenever the server offers it, which sketchd does over TLS.
//
//	c, err := client.New("https://sketchd.internal:8443", client.WithCAFile("/etc/sketchd/ca.pem"), client.WithToken(tok))
//
// # Errors
//
// An answer that is not a success is a *Problem (errors.As), carrying the
// server's type, title, status, detail and request id; IsNotFound,
// IsConflict, IsInvalid, IsTooLarge, IsUnauthorized, IsForbidden and
// IsUnavailable test for the common ones. A failure to get an answer is
// the transport's error, wrapped. Every call sends an X-Request-ID (the
// same on each retry of a call), which the server logs and echoes in
// problems.
//
// # Retries
//
// See RetryPolicy for what is retried and why. In short: every call is
// retried on 503 (after the server's Retry-After), on refused or reset
// connections and on timeouts. Every write is sent with an
// Idempotency-Key of its own (a random UUID, the same on each attempt of
// the call; a Batcher's flush is one call), so the server applies it once
// even when an answer is lost and the call is retried: Count-Min adds,
// events and raw merges included. Against a server that predates
// Idempotency-Key, use WithoutIdempotencyKeys: then Count-Min adds,
// events and raw merges are sent once unless the call has
// WithUnsafeRetry, because a retry after a lost answer could count the
// same ids twice.
//
// # Batching
//
// NewBatcher buffers ids per sketch and sends them in large requests
// (big-endian int64 bodies for integer ids), by size or at an interval,
// with a bounded buffer that blocks or drops when full. Flush and Close
// wait until what was added is durable.
package client
