package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// Backup streams the server's backup archive (GET /v1/backup, an admin
// token's) into w as it arrives, without holding it, and returns the
// bytes written. The archive (docs/backup.md) carries a checksum per
// record and a digest of the whole stream in its trailer; an archive cut
// short by a failure on the server has no trailer. This client does not
// read the format: `sketchd backup` and `sketchd restore` check it. A
// backup is not retried (part of it may be in w already); an error
// before the first byte is a *Problem as usual.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	const path = "/v1/backup"
	u := *c.base
	u.Path = c.base.Path + path
	u.RawPath = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, fmt.Errorf("client: GET %s: %w", path, err)
	}
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("X-Request-ID", newRequestID())
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, &transportError{method: http.MethodGet, path: path, err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		if err != nil {
			return 0, &transportError{method: http.MethodGet, path: path, err: err}
		}
		return 0, problemFrom(&response{status: resp.StatusCode, header: resp.Header, body: b}, http.MethodGet, path)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, &transportError{method: http.MethodGet, path: path, err: err}
	}
	return n, nil
}
