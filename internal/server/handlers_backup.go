package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/sketchd/sketchd/internal/archive"
)

// Backuper is the part of the contract that writes a backup archive
// (docs/backup.md). Backup writes every sketch, series definition,
// bucket and idempotency key inside its window to w, as of one moment
// later than the call's start: every write acknowledged before the call
// is in it and none is in it in part; writes go on meanwhile. A stored
// value that fails its check fails the backup with a Damaged error
// naming it. It does not close w. A backend without it answers
// GET /v1/backup with 501.
type Backuper interface {
	Backup(ctx context.Context, w *archive.Writer) error
	// BackupSource is the archive header's source byte.
	BackupSource() byte
}

// ArchiveMediaType is the media type of a backup archive.
const ArchiveMediaType = "application/vnd.sketchd.archive"

// handleBackup streams the store's archive. Until the first bytes go out
// an error is a problem answer as usual; after, the connection is cut,
// so the archive has no trailer and every reader refuses it (and the
// error is logged).
func (s *Server) handleBackup(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r.Context(), "a backup"); err != nil {
		return err
	}
	b, ok := s.store.(Backuper)
	if !ok {
		return &httpError{http.StatusNotImplemented, "this store backend cannot take a backup"}
	}
	taken := time.Now().UTC()
	if r.Method == http.MethodHead {
		// The headers a GET would send, without taking a backup.
		w.Header().Set("Content-Type", ArchiveMediaType)
		w.Header().Set("Cache-Control", "no-store")
		return nil
	}
	sw := &startedWriter{w: w, header: func() {
		h := w.Header()
		h.Set("Content-Type", ArchiveMediaType)
		h.Set("Content-Disposition", `attachment; filename="sketchd-`+taken.Format("20060102T150405Z")+`.skar"`)
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
	}}
	aw, err := archive.NewWriter(sw, archive.Header{Taken: taken, Source: b.BackupSource()})
	if err == nil {
		if err = b.Backup(r.Context(), aw); err == nil {
			err = aw.Close()
		}
	}
	if err == nil {
		return nil
	}
	if !sw.started {
		return err
	}
	if !errors.Is(err, context.Canceled) {
		s.log.Error("backup failed after the archive started; the connection is cut, so the partial archive has no trailer", "err", err, "request_id", requestIDOf(r.Context()))
	}
	panic(http.ErrAbortHandler)
}
