package client

import (
	"context"
	"net/http"
)

// Health checks that the server process is alive (GET /healthz).
func (c *Client) Health(ctx context.Context) error {
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/healthz", idempotent: true, ok: []int{http.StatusOK}})
	return err
}

// Ready checks that the server takes traffic (GET /readyz): its store is
// open and it is not draining. A server that is not ready answers 503,
// which is retried like any other; IsUnavailable reports it at the end.
func (c *Client) Ready(ctx context.Context) error {
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/readyz", idempotent: true, ok: []int{http.StatusOK}})
	return err
}

// Metrics returns the server's Prometheus metrics in the text format
// (GET /metrics).
func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	r, err := c.do(ctx, call{method: http.MethodGet, path: "/metrics", idempotent: true, ok: []int{http.StatusOK}})
	if err != nil {
		return nil, err
	}
	return r.body, nil
}

// OpenAPI returns the server's API description (GET /openapi.yaml).
func (c *Client) OpenAPI(ctx context.Context) ([]byte, error) {
	r, err := c.do(ctx, call{method: http.MethodGet, path: "/openapi.yaml", idempotent: true, ok: []int{http.StatusOK}})
	if err != nil {
		return nil, err
	}
	return r.body, nil
}
