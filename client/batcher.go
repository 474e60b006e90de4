package client

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Overflow says what an add does when the Batcher's buffer is full.
type Overflow int

const (
	// Block makes the add wait for room (or for its context to end).
	Block Overflow = iota
	// Drop makes the add give up at once with ErrDropped, counting the
	// ids it dropped (BatcherStats.Dropped): a request path never waits
	// on sketchd.
	Drop
)

// ErrDropped is returned by a Batcher add whose ids (some or all) did
// not fit in a full buffer with Overflow Drop.
var ErrDropped = errors.New("client: batcher buffer full; ids dropped")

// ErrClosed is returned by a Batcher add after Close.
var ErrClosed = errors.New("client: batcher closed")

// BatcherOptions configures a Batcher. Zero fields take the defaults.
type BatcherOptions struct {
	// MaxBatch is the most ids a request carries (default 10,000; keep
	// it under the server's -max-ids). A sketch's buffer is sent as soon
	// as it holds this many.
	MaxBatch int
	// Interval is the longest an id waits in a buffer before it is sent
	// (default 200 ms).
	Interval time.Duration
	// MaxBufferBytes bounds the memory of ids waiting and in flight
	// (default 32 MiB): an integer id costs 8 bytes, a hash its decimal
	// digits plus one, a text id its JSON-encoded length plus one. An
	// add that would exceed it blocks or drops, as Overflow says. The
	// bound is split into equal shares, one per processor (fewer if a
	// share would hold less than two full batches of integer ids), so
	// that adds from many goroutines do not contend; one text id must fit
	// in a share.
	MaxBufferBytes int
	Overflow       Overflow
	// Concurrency is the number of requests in flight (default 8).
	Concurrency int
	// RequestTimeout bounds one flush request, its retries included
	// (default 30 s).
	RequestTimeout time.Duration
	// Create makes missing sketches as HLLs with the default parameters.
	Create bool
	// CountMin says the sketches are Count-Min sketches (each id counts
	// once). Every flush is one request with an Idempotency-Key of its
	// own, retried as RetryPolicy says, so a retry after a lost answer
	// counts nothing twice. With WithoutIdempotencyKeys, Count-Min
	// flushes are sent once and not retried (a retry would count them
	// twice); HLL flushes are still retried.
	CountMin bool
	// OnError is called, from a background goroutine, for each request
	// that failed after its retries, with the ids it carried. Those ids
	// are lost (they are counted in BatcherStats.Failed). It must be safe
	// for concurrent use and should return quickly: a slow OnError holds
	// back flushing. With nil, a failure is reported only by the Flush or
	// Close that waits for it (a request sent by size or interval and
	// finished before any Flush is only counted in BatcherStats.Failed).
	OnError func(*BatchError)
}

func (o *BatcherOptions) setDefaults() {
	if o.MaxBatch <= 0 {
		o.MaxBatch = 10_000
	}
	if o.Interval <= 0 {
		o.Interval = 200 * time.Millisecond
	}
	if o.MaxBufferBytes <= 0 {
		o.MaxBufferBytes = 32 << 20
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
}

// BatchError is a flush request that failed: Count ids for Sketch were
// not added.
type BatchError struct {
	Sketch string
	Count  int
	Err    error
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("client: batcher: %d ids for %q not added: %v", e.Count, e.Sketch, e.Err)
}

func (e *BatchError) Unwrap() error { return e.Err }

// BatcherStats counts ids. Added = Flushed + Failed + what is buffered
// or in flight; Dropped ids were never added.
type BatcherStats struct {
	Added   uint64 // accepted by an add
	Flushed uint64 // acknowledged by the server: durable
	Failed  uint64 // in requests that failed (reported to OnError)
	Dropped uint64 // refused by a full buffer (Overflow Drop)
	// BufferedBytes is the memory of ids waiting or in flight now.
	BufferedBytes int
	// Requests counts the flush requests sent (successful or not).
	Requests uint64
}

// bodyKind is the wire form of a buffer.
type bodyKind uint8

const (
	kindInts    bodyKind = iota // application/octet-stream, big-endian int64
	kindStrings                 // {"ids":["…",…]}
	kindHashes                  // {"hashes":[…]}
)

// prefix is what a JSON body starts with ("" for octet-stream).
func (k bodyKind) prefix() string {
	switch k {
	case kindStrings:
		return `{"ids":[`
	case kindHashes:
		return `{"hashes":[`
	}
	return ""
}

type bufKey struct {
	name string
	kind bodyKind
}

// buffer is one sketch's ids of one kind in one stripe, already encoded
// as the start of a request body.
type buffer struct {
	body []byte
	n    int
}

// cost is the buffer's share of the memory budget: its ids as encoded.
func (buf *buffer) cost(k bodyKind) int { return len(buf.body) - len(k.prefix()) }

// stripe is a share of the buffers with its own lock, so that goroutines
// adding at once rarely wait for each other. An add picks a stripe at
// random; a sketch's ids are spread over the stripes and gathered again
// when the interval or a Flush sends them.
type stripe struct {
	mu   sync.Mutex
	bufs map[bufKey]*buffer
	// last is the buffer of the stripe's latest add: a backend adds to
	// few sketches, and comparing a name is cheaper than hashing it.
	lastKey bufKey
	last    *buffer
	// used is the memory of this stripe's ids, buffered, queued or in
	// flight: at most Batcher.share. added counts ids. Both under mu:
	// plain integers keep an add to one atomic operation each for the
	// lock and the unlock.
	used  int
	added uint64
	_     [64]byte // keeps stripes off each other's cache lines
}

// charge is a stripe's part of a batch's memory.
type charge struct {
	st *stripe
	n  int
}

// batch is a body on its way to the server.
type batch struct {
	key  bufKey
	body []byte
	n    int
	cost []charge
	done chan struct{}
	err  error // set before done is closed
}

// Batcher buffers ids per sketch and sends them in the background: a
// sketch's ids go when MaxBatch of them have gathered or when Interval
// has passed, whichever is first, over up to Concurrency requests at a
// time. Memory is bounded by MaxBufferBytes. Flush and Close wait until
// what was added before them is durable (or has failed). A Batcher is
// safe for concurrent use; make one per Client and share it.
//
// A Batcher sends HLL adds (integer ids as big-endian int64 bodies, text
// ids and hashes as JSON), retried as safe; set CountMin for Count-Min
// sketches.
type Batcher struct {
	c    *Client
	opts BatcherOptions

	stripes []stripe
	share   int          // MaxBufferBytes / len(stripes): each stripe's bound
	waiters atomic.Int64 // adds waiting for room
	closed  atomic.Bool
	// fullBodies recycles octet-stream bodies of a full batch.
	fullBodies sync.Pool

	mu          sync.Mutex
	queue       []*batch // cut, waiting for a worker
	outstanding map[*batch]struct{}
	space       chan struct{} // closed (and replaced) when room is freed
	work        *sync.Cond    // on mu: the queue grew, or stopping
	stopped     bool          // workers exit once the queue is empty
	tickerDone  chan struct{}

	sendCtx    context.Context
	cancelSend context.CancelFunc
	workers    sync.WaitGroup

	flushed, failed, dropped, requests atomic.Uint64
}

// NewBatcher starts a Batcher sending through c.
func NewBatcher(c *Client, opts BatcherOptions) *Batcher {
	opts.setDefaults()
	// One stripe a processor, but each able to hold two full batches of
	// integer ids.
	n := min(64, runtime.GOMAXPROCS(0), max(1, opts.MaxBufferBytes/(2*8*opts.MaxBatch)))
	b := &Batcher{
		c: c, opts: opts,
		stripes:     make([]stripe, n),
		share:       opts.MaxBufferBytes / n,
		outstanding: map[*batch]struct{}{},
		space:       make(chan struct{}),
		tickerDone:  make(chan struct{}),
	}
	for i := range b.stripes {
		b.stripes[i].bufs = map[bufKey]*buffer{}
	}
	b.work = sync.NewCond(&b.mu)
	b.sendCtx, b.cancelSend = context.WithCancel(context.Background())
	for range opts.Concurrency {
		b.workers.Add(1)
		go b.worker()
	}
	go b.tick()
	return b
}

// AddInt adds one integer id to the HLL sketch name.
func (b *Batcher) AddInt(ctx context.Context, name string, id int64) error {
	// AddInts for one id, without its loops: a backend calls this per
	// event.
	key := bufKey{name, kindInts}
	st, err := b.lock(ctx, 8)
	if err != nil {
		b.dropRest(err, 1)
		return err
	}
	buf := b.bufLocked(st, key)
	buf.body = binary.BigEndian.AppendUint64(buf.body, uint64(id))
	buf.n++
	if buf.n >= b.opts.MaxBatch {
		b.cutFullLocked(st, key, buf)
	}
	st.added++
	st.mu.Unlock()
	return nil
}

// AddInts adds integer ids (hashed like hll_hash_bigint) to the sketch
// name. With Overflow Block it waits for room; if ctx ends first, the ids
// not yet buffered are not added and ctx's error is returned. With Drop,
// ids that do not fit are counted as dropped and ErrDropped is returned.
func (b *Batcher) AddInts(ctx context.Context, name string, ids ...int64) error {
	key := bufKey{name, kindInts}
	for len(ids) > 0 {
		n := max(1, min(len(ids), b.opts.MaxBatch, b.share/8))
		st, err := b.lock(ctx, 8*n)
		if err != nil {
			b.dropRest(err, len(ids))
			return err
		}
		buf := b.bufLocked(st, key)
		for rest := ids[:n]; len(rest) > 0; {
			k := min(len(rest), b.opts.MaxBatch-buf.n)
			at := len(buf.body)
			buf.body = slices.Grow(buf.body, 8*k)[:at+8*k]
			for i, id := range rest[:k] {
				binary.BigEndian.PutUint64(buf.body[at+8*i:], uint64(id))
			}
			buf.n += k
			rest = rest[k:]
			if buf.n >= b.opts.MaxBatch {
				buf = b.cutFullLocked(st, key, buf)
			}
		}
		st.added += uint64(n)
		st.mu.Unlock()
		ids = ids[n:]
	}
	return nil
}

// AddHashes adds already hashed values to the HLL sketch name, as
// Client.AddHashes does.
func (b *Batcher) AddHashes(ctx context.Context, name string, hashes ...int64) error {
	key := bufKey{name, kindHashes}
	for len(hashes) > 0 {
		n := max(1, min(len(hashes), b.opts.MaxBatch, b.share/21))
		// A decimal int64 and its comma take at most 21 bytes; addJSON
		// gives back the rest.
		reserved := 21 * n
		if err := b.addJSON(ctx, key, n, reserved, func(dst []byte, i int) []byte { return strconv.AppendInt(dst, hashes[i], 10) }); err != nil {
			b.dropRest(err, len(hashes))
			return err
		}
		hashes = hashes[n:]
	}
	return nil
}

// AddStrings adds text ids (hashed like hll_hash_text) to the sketch
// name. Each must be valid UTF-8; none is added otherwise.
func (b *Batcher) AddStrings(ctx context.Context, name string, ids ...string) error {
	for _, s := range ids {
		if !utf8.ValidString(s) {
			return errNotUTF8(s)
		}
	}
	key := bufKey{name, kindStrings}
	for len(ids) > 0 {
		// An id costs its JSON form and a comma; the first of a buffer
		// has none, and addJSON gives its byte back.
		n, reserved := 0, 0
		for n < len(ids) && n < b.opts.MaxBatch {
			c := jsonStringLen(ids[n]) + 1
			if n > 0 && reserved+c > b.share {
				break
			}
			reserved += c
			n++
		}
		if err := b.addJSON(ctx, key, n, reserved, func(dst []byte, i int) []byte {
			dst, _ = appendJSONString(dst, ids[i]) // checked above
			return dst
		}); err != nil {
			b.dropRest(err, len(ids))
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// addJSON buffers n elements of a JSON array body under key, element i
// appended by elem, after taking reserved bytes of room (at least what
// they take with their commas); it gives back what the reservation
// overcharged.
func (b *Batcher) addJSON(ctx context.Context, key bufKey, n, reserved int, elem func(dst []byte, i int) []byte) error {
	st, err := b.lock(ctx, reserved)
	if err != nil {
		return err
	}
	buf := b.bufLocked(st, key)
	used := 0
	for i := range n {
		before := len(buf.body)
		if buf.n > 0 {
			buf.body = append(buf.body, ',')
		}
		buf.body = elem(buf.body, i)
		buf.n++
		used += len(buf.body) - before
		if buf.n >= b.opts.MaxBatch {
			buf = b.cutFullLocked(st, key, buf)
		}
	}
	st.added += uint64(n)
	st.used -= reserved - used // what the estimate overcharged
	st.mu.Unlock()
	if reserved > used && b.waiters.Load() > 0 {
		b.mu.Lock()
		b.wakeLocked()
		b.mu.Unlock()
	}
	return nil
}

// dropRest counts ids an add gave up on when the buffer was full.
func (b *Batcher) dropRest(err error, n int) {
	if errors.Is(err, ErrDropped) {
		b.dropped.Add(uint64(n))
	}
}

// lock takes cost bytes of room in a stripe (waiting or failing as
// Overflow says) and returns the stripe, locked, to add to. The first
// stripe with room that is not locked is taken, so goroutines adding at
// once spread over the stripes without any shared counter.
func (b *Batcher) lock(ctx context.Context, cost int) (*stripe, error) {
	if cost > b.share {
		return nil, fmt.Errorf("client: batcher: the ids need %d bytes, more than a %d-byte share of MaxBufferBytes", cost, b.share)
	}
	for {
		st, err := b.take(cost)
		if st != nil || err != nil {
			return st, err
		}
		if b.opts.Overflow == Drop {
			return nil, ErrDropped
		}
		// Count this add as waiting before looking again, so a release
		// that happens after the look sees it and wakes it.
		b.waiters.Add(1)
		b.mu.Lock()
		wait := b.space
		b.mu.Unlock()
		if b.room(cost) || b.closed.Load() {
			b.waiters.Add(-1)
			continue
		}
		select {
		case <-ctx.Done():
			b.waiters.Add(-1)
			return nil, ctx.Err()
		case <-wait:
			b.waiters.Add(-1)
		}
	}
}

// take finds a stripe with cost bytes of room, charges it and returns it
// locked; nil if none has room.
func (b *Batcher) take(cost int) (*stripe, error) {
	for pass := range 2 {
		for i := range b.stripes {
			st := &b.stripes[i]
			if pass == 0 {
				if !st.mu.TryLock() {
					continue
				}
			} else {
				st.mu.Lock()
			}
			// Close marks the Batcher closed before it gathers the
			// stripes, so an add that sees it open here is gathered.
			if b.closed.Load() {
				st.mu.Unlock()
				return nil, ErrClosed
			}
			if st.used+cost <= b.share {
				st.used += cost
				return st, nil
			}
			st.mu.Unlock()
		}
	}
	if b.closed.Load() {
		return nil, ErrClosed
	}
	return nil, nil
}

// room reports whether some stripe has cost bytes free.
func (b *Batcher) room(cost int) bool {
	for i := range b.stripes {
		st := &b.stripes[i]
		st.mu.Lock()
		ok := st.used+cost <= b.share
		st.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// release gives back n bytes of st's room and wakes waiting adds.
func (b *Batcher) release(st *stripe, n int) {
	if n == 0 {
		return
	}
	st.mu.Lock()
	st.used -= n
	st.mu.Unlock()
	if b.waiters.Load() > 0 {
		b.mu.Lock()
		b.wakeLocked()
		b.mu.Unlock()
	}
}

func (b *Batcher) wakeLocked() {
	close(b.space)
	b.space = make(chan struct{})
}

// bufLocked returns key's buffer in st, making it.
func (b *Batcher) bufLocked(st *stripe, key bufKey) *buffer {
	if st.last != nil && st.lastKey == key {
		return st.last
	}
	buf := st.bufs[key]
	if buf == nil {
		buf = &buffer{}
		if key.kind == kindInts {
			// Small to start: a sketch that gets a few ids an interval
			// should not hold a full batch's capacity.
			buf.body = make([]byte, 0, 8*min(b.opts.MaxBatch, 512))
		} else {
			buf.body = append(make([]byte, 0, 4096), key.kind.prefix()...)
		}
		st.bufs[key] = buf
	}
	st.lastKey, st.last = key, buf
	return buf
}

// cutFullLocked queues a full buffer and returns its replacement, which
// starts at full size: the sketch is busy.
func (b *Batcher) cutFullLocked(st *stripe, key bufKey, buf *buffer) *buffer {
	bt := &batch{key: key, body: buf.body, n: buf.n, cost: []charge{{st, buf.cost(key.kind)}}, done: make(chan struct{})}
	next := &buffer{}
	if key.kind == kindInts {
		if p, ok := b.fullBodies.Get().(*[]byte); ok {
			next.body = (*p)[:0]
		} else {
			next.body = make([]byte, 0, 8*b.opts.MaxBatch)
		}
	} else {
		next.body = append(make([]byte, 0, cap(buf.body)), key.kind.prefix()...)
	}
	st.bufs[key] = next
	st.lastKey, st.last = key, next
	b.enqueue([]*batch{bt})
	return next
}

// enqueue hands batches to the workers.
func (b *Batcher) enqueue(bts []*batch) {
	if len(bts) == 0 {
		return
	}
	for _, bt := range bts {
		if p := bt.key.kind.prefix(); p != "" {
			bt.body = append(bt.body, "]}"...)
		}
	}
	b.mu.Lock()
	for _, bt := range bts {
		b.queue = append(b.queue, bt)
		b.outstanding[bt] = struct{}{}
	}
	if len(bts) == 1 {
		b.work.Signal()
	} else {
		b.work.Broadcast()
	}
	b.mu.Unlock()
}

// cutAll gathers every stripe's buffers, joins each sketch's into as few
// batches as MaxBatch allows, and queues them. A stripe forgets its
// buffers, so a sketch no longer written costs nothing.
func (b *Batcher) cutAll() {
	type part struct {
		st  *stripe
		buf *buffer
	}
	parts := map[bufKey][]part{}
	for i := range b.stripes {
		st := &b.stripes[i]
		st.mu.Lock()
		for key, buf := range st.bufs {
			if buf.n > 0 {
				parts[key] = append(parts[key], part{st, buf})
			}
		}
		clear(st.bufs)
		st.last = nil
		st.mu.Unlock()
	}
	var out []*batch
	for key, bufs := range parts {
		var cur *batch
		for _, p := range bufs {
			buf := p.buf
			if cur != nil && cur.n+buf.n <= b.opts.MaxBatch {
				// Join: octet-stream bodies concatenate; a JSON body's
				// elements follow the others' after a comma.
				if key.kind == kindInts {
					cur.body = append(cur.body, buf.body...)
				} else {
					cur.body = append(append(cur.body, ','), buf.body[len(key.kind.prefix()):]...)
				}
				cur.n += buf.n
				cur.cost = append(cur.cost, charge{p.st, buf.cost(key.kind)})
				continue
			}
			if cur != nil {
				out = append(out, cur)
			}
			cur = &batch{key: key, body: buf.body, n: buf.n, cost: []charge{{p.st, buf.cost(key.kind)}}, done: make(chan struct{})}
		}
		out = append(out, cur)
	}
	b.enqueue(out)
}

// tick sends every buffer each Interval.
func (b *Batcher) tick() {
	t := time.NewTicker(b.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-b.tickerDone:
			return
		case <-t.C:
			b.cutAll()
		}
	}
}

// worker sends queued batches until the Batcher stops.
func (b *Batcher) worker() {
	defer b.workers.Done()
	for {
		b.mu.Lock()
		for len(b.queue) == 0 && !b.stopped {
			b.work.Wait()
		}
		if len(b.queue) == 0 {
			b.mu.Unlock()
			return
		}
		bt := b.queue[0]
		b.queue[0] = nil
		b.queue = b.queue[1:]
		b.mu.Unlock()

		err := b.send(bt)
		b.requests.Add(1)
		if err != nil {
			b.failed.Add(uint64(bt.n))
			be := &BatchError{Sketch: bt.key.name, Count: bt.n, Err: err}
			bt.err = be
			if b.opts.OnError != nil {
				b.opts.OnError(be)
			}
		} else {
			b.flushed.Add(uint64(bt.n))
			// The server answered 200 after reading the whole body, so
			// nothing reads it any more.
			if bt.key.kind == kindInts && cap(bt.body) == 8*b.opts.MaxBatch {
				body := bt.body[:0]
				b.fullBodies.Put(&body)
			}
		}
		bt.body = nil
		b.mu.Lock()
		delete(b.outstanding, bt)
		b.mu.Unlock()
		for _, c := range bt.cost {
			b.release(c.st, c.n)
		}
		close(bt.done)
	}
}

// send makes one flush request, with an Idempotency-Key of its own
// (without keys, retried as safe unless CountMin).
func (b *Batcher) send(bt *batch) error {
	ctx, cancel := context.WithTimeout(b.sendCtx, b.opts.RequestTimeout)
	defer cancel()
	var opts []CallOption
	if b.opts.Create {
		opts = append(opts, WithCreate())
	}
	contentType := "application/json"
	if bt.key.kind == kindInts {
		contentType = "application/octet-stream"
	}
	n, err := b.c.addBody(ctx, bt.key.name, contentType, bt.body, !b.opts.CountMin, opts)
	if err == nil && n != bt.n {
		err = fmt.Errorf("client: batcher: server accepted %d of %d ids", n, bt.n)
	}
	return err
}

// Flush sends everything buffered and waits until it, and every request
// already in flight, has been answered: when it returns nil, every id
// added before the call is durable. Otherwise it returns the failed
// requests' *BatchError (joined), or ctx's error if ctx ended first (the
// sends go on).
func (b *Batcher) Flush(ctx context.Context) error {
	b.cutAll()
	b.mu.Lock()
	wait := make([]*batch, 0, len(b.outstanding))
	for bt := range b.outstanding {
		wait = append(wait, bt)
	}
	b.mu.Unlock()
	var errs []error
	for _, bt := range wait {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-bt.done:
			if bt.err != nil {
				errs = append(errs, bt.err)
			}
		}
	}
	return errors.Join(errs...)
}

// Close stops accepting ids (adds then return ErrClosed), flushes like
// Flush and stops the background goroutines. If ctx ends before the
// flush does, the requests still in flight are cancelled, their ids
// count as failed, and ctx's error is returned. Close may be called more
// than once.
func (b *Batcher) Close(ctx context.Context) error {
	already := b.closed.Swap(true)
	b.mu.Lock()
	b.wakeLocked() // blocked adds see closed
	b.mu.Unlock()
	if !already {
		close(b.tickerDone)
	}
	err := b.Flush(ctx)
	if ctx.Err() != nil {
		b.cancelSend()
	}
	b.mu.Lock()
	b.stopped = true
	b.work.Broadcast()
	b.mu.Unlock()
	b.workers.Wait()
	b.cancelSend()
	return err
}

// Stats returns the Batcher's counts so far.
func (b *Batcher) Stats() BatcherStats {
	st := BatcherStats{Flushed: b.flushed.Load(), Failed: b.failed.Load(), Dropped: b.dropped.Load(), Requests: b.requests.Load()}
	for i := range b.stripes {
		s := &b.stripes[i]
		s.mu.Lock()
		st.Added += s.added
		st.BufferedBytes += s.used
		s.mu.Unlock()
	}
	return st
}

// jsonStringLen is len(appendJSONString(nil, s)) for valid UTF-8 s.
func jsonStringLen(s string) int {
	n := 2 + len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}
