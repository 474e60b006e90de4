// Package idem carries a write's idempotency key (the Idempotency-Key
// request header) from the HTTP layer to the store that keeps it.
//
// The server parses the header, fingerprints the request and renders the
// answer; the store keeps the key, the fingerprint and the answer in the
// same log record or transaction as the write the key guards, so that a
// crash after the commit and before the answer still turns a retry into
// a replay of that answer, and a write that did not commit leaves no key.
//
// A guarded write runs with a *Guard in its context (With). A store write
// that finds one first claims its ID: if a write already recorded it (and
// its window has not run out) the write changes nothing and fails with
// ErrTaken; otherwise it applies as usual, calls Guard.Seal with what it
// returns (Result) and keeps the answer Seal gives in the same atomic,
// durable write. Only one write of a call claims the key: a store that
// makes several (a cleanup pass) runs the others under Without.
package idem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// MaxKeyLen is the longest key accepted, in bytes.
const MaxKeyLen = 255

// ID names a remembered write: the client's key, scoped by who sent it and
// by what the route writes, so that two tenants' keys never collide.
type ID struct {
	// Scope is the sender: a digest of its bearer token ("" on a server
	// without tokens, where every client shares one scope).
	Scope string
	// Target is the sketch or series the route names ({name} in its
	// path), or "" for routes that name none (/v1/events, /v1/union).
	Target string
	// Key is the header's value.
	Key string
}

// Size approximates the bytes a kept record of id holds.
func (id ID) Size() int { return len(id.Scope) + len(id.Target) + len(id.Key) }

// Record is what a store keeps for an ID.
type Record struct {
	// Fingerprint identifies the request that used the key (method, path,
	// query, media type and body): a retry must match it.
	Fingerprint [32]byte
	// Answer is the answer sent, in the server's encoding; the store keeps
	// it as opaque bytes.
	Answer []byte
	// Created is when the write committed; the record is kept for the
	// store's window from then.
	Created time.Time
}

// Size approximates the bytes r holds, for a store's bound.
func (r Record) Size() int { return len(r.Fingerprint) + len(r.Answer) + 8 }

// Result is what a guarded write hands Guard.Seal: the values its store
// method returns, in the fields that method fills.
type Result struct {
	// Info: Create, Put, Merge, Transform.
	Info sketch.Info
	// Created: Create, Put, CreateSeries.
	Created bool
	// Added: Add, AddSeries.
	Added sketch.Added
	// SeriesAdded: AddSeries, the levels that took the add and those
	// it was too old for.
	SeriesAdded series.Added
	// Counts: AddEvents.
	Counts map[sketch.Type]int
	// Sketch: Union with into.
	Sketch sketch.Sketch
	// Series: CreateSeries, ChangeSeries.
	Series series.Info
	// Writes: ImportSeries, the buckets written.
	Writes []series.Write
}

// Guard is a write under an idempotency key, carried in its context.
type Guard struct {
	ID
	// Fingerprint is the request's (see Record).
	Fingerprint [32]byte
	// Render renders the HTTP answer of a write that returned res. It is
	// called under the write's locks, before it commits, and must not
	// call the store.
	Render func(res Result) ([]byte, error)

	answer []byte
}

// Seal renders the answer of a write that returned res and keeps it as
// the one to send. A store calls it once the write's changes are decided
// and before they commit, and keeps the bytes it returns with them; a
// write that runs again (a retried transaction) seals again, and the last
// seal is the answer.
func (g *Guard) Seal(res Result) ([]byte, error) {
	if g.Render == nil {
		return nil, errors.New("idem: a guarded write has no answer to render")
	}
	b, err := g.Render(res)
	if err != nil {
		return nil, fmt.Errorf("idem: rendering the answer: %w", err)
	}
	g.answer = b
	return b, nil
}

// Answer returns the answer the last Seal rendered, or nil.
func (g *Guard) Answer() []byte { return g.answer }

// ErrTaken is what a guarded write returns when its key was already
// recorded by another write: it changed nothing. The caller reads the
// record (the store's Remembered) to replay or refuse.
var ErrTaken = errors.New("idem: the idempotency key is already recorded")

// ErrInFlight is what a guarded write returns when another write holding
// the same key is still being made durable in this process: it changed
// nothing.
var ErrInFlight = errors.New("idem: a write with the same idempotency key is in progress")

type ctxKey struct{}

// With returns ctx carrying g.
func With(ctx context.Context, g *Guard) context.Context {
	return context.WithValue(ctx, ctxKey{}, g)
}

// From returns the guard ctx carries, or nil.
func From(ctx context.Context) *Guard {
	g, _ := ctx.Value(ctxKey{}).(*Guard)
	return g
}

// Without returns ctx carrying no guard: for the writes of a call that are
// not the one the key guards.
func Without(ctx context.Context) context.Context {
	if From(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, (*Guard)(nil))
}
