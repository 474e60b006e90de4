package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/sketchd/sketchd/client"
	"github.com/sketchd/sketchd/internal/archive"
)

// TestBackup streams a server's archive: what arrives is a whole archive
// (its trailer's counts and digest check out) holding the sketches.
func TestBackup(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := context.Background()
	for _, n := range []string{"a", "b"} {
		if _, err := c.AddInts(ctx, n, []int64{1, 2, 3}, client.WithCreate()); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	n, err := c.Backup(ctx, &buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("Backup = %d, %v; %d bytes arrived", n, err, buf.Len())
	}
	r, err := archive.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for {
		rec, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		if rec.Sketch != nil {
			names = append(names, rec.Sketch.Name)
		}
	}
	if len(names) != 2 || names[0] != "a" || names[1] != "b" {
		t.Errorf("archive holds %v", names)
	}
}

// TestBackupProblem: a refusal before the first byte is a *Problem, and
// nothing is written.
func TestBackupProblem(t *testing.T) {
	t.Parallel()
	url := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"type":"urn:sketchd:problem:forbidden","title":"Forbidden","status":403,"detail":"a backup needs an admin token"}`))
	}))
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err = c.Backup(context.Background(), &buf)
	var p *client.Problem
	if !errors.As(err, &p) || p.Status != http.StatusForbidden || buf.Len() != 0 {
		t.Fatalf("Backup = %v with %d bytes written, want a 403 problem and none", err, buf.Len())
	}
}
