// Package postgres holds the PostgreSQL backend's schema as versioned SQL
// steps (NNNN_what.sql), embedded so that the binary carries them. The
// backend applies, at start and under an advisory lock, every step whose
// version sketchd_schema_migrations does not list yet, each in its own
// transaction. A step, once released, is never edited: a change is a new
// step.
package postgres

import "embed"

// FS holds the steps.
//
//go:embed *.sql
var FS embed.FS
