package client

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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
	// (default 32 MiB): an integer or hashed id costs 8 bytes (about 20
	// for hashes), a text id its JSON-encoded length plus one. An add
	// that would exceed it blocks or drops, as Overflow says.
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
	// once): flushes are then sent once and not retried, because a retry
	// after a lost answer would count them twice. Without it flushes are
	// HLL adds, retried as RetryPolicy says.
	CountMin bool
	// OnError is called, from a background goroutine, for each request
	// that failed after its retries, with the ids it carried. Those ids
	// are lost (they are counted in BatcherStats.Failed). It must be safe
	// for concurrent use and should return quickly: a slow OnError holds
	// back flushing. Nil ignores errors (Flush and Close still report
	// them).
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

type bufKey struct {
	name string
	kind bodyKind
}

// buffer is one sketch's ids of one kind, already encoded as the start of
// a request body.
type buffer struct {
	body []byte
	n    int
}

// batch is a cut buffer on its way to the server.
type batch struct {
	key  bufKey
	body []byte
	n    int
	cost int
	done chan struct{}
	err  error // set before done is closed
}

// Batcher buffers ids per sketch and sends them in the background: a
// sketch's buffer goes when it holds MaxBatch ids or when Interval has
// passed, whichever is first, over up to Concurrency requests at a time.
// Memory is bounded by MaxBufferBytes. Flush and Close wait until what
// was added before them is durable (or has failed). A Batcher is safe for
// concurrent use; make one per Client and share it.
//
// A Batcher sends HLL adds (integer ids as big-endian int64 bodies, text
// ids and hashes as JSON), retried as safe; set CountMin for Count-Min
// sketches.
type Batcher struct {
	c    *Client
	opts BatcherOptions

	mu          sync.Mutex
	bufs        map[bufKey]*buffer
	queue       []*batch // cut, waiting for a worker
	outstanding map[*batch]struct{}
	used        int           // bytes buffered, queued and in flight
	space       chan struct{} // closed (and replaced) when used shrinks
	work        *sync.Cond    // on mu: queue grew or closing
	closed      bool
	stopped     bool // workers may exit once the queue is empty

	sendCtx    context.Context
	cancelSend context.CancelFunc
	workers    sync.WaitGroup
	tickerDone chan struct{}

	added, flushed, failed, dropped, requests atomic.Uint64
}

// NewBatcher starts a Batcher sending through c.
func NewBatcher(c *Client, opts BatcherOptions) *Batcher {
	opts.setDefaults()
	b := &Batcher{
		c: c, opts: opts,
		bufs:        map[bufKey]*buffer{},
		outstanding: map[*batch]struct{}{},
		space:       make(chan struct{}),
		tickerDone:  make(chan struct{}),
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
	var one [1]int64
	one[0] = id
	return b.AddInts(ctx, name, one[:]...)
}

// AddInts adds integer ids (hashed like hll_hash_bigint) to the sketch
// name. With Overflow Block it waits for room; if ctx ends first, the ids
// not yet buffered are not added and ctx's error is returned. With Drop,
// ids that do not fit are counted as dropped and ErrDropped is returned.
func (b *Batcher) AddInts(ctx context.Context, name string, ids ...int64) error {
	key := bufKey{name, kindInts}
	for len(ids) > 0 {
		n := min(len(ids), b.opts.MaxBatch)
		if err := b.reserve(ctx, 8*n, n); err != nil {
			b.dropRest(err, len(ids))
			return err
		}
		buf := b.bufLocked(key)
		for _, id := range ids[:n] {
			buf.body = binary.BigEndian.AppendUint64(buf.body, uint64(id))
			buf.n++
			if buf.n >= b.opts.MaxBatch {
				b.cutLocked(key, buf)
				buf = b.bufLocked(key)
			}
		}
		b.mu.Unlock()
		b.added.Add(uint64(n))
		ids = ids[n:]
	}
	return nil
}

// AddHashes adds already hashed values to the HLL sketch name, as
// Client.AddHashes does.
func (b *Batcher) AddHashes(ctx context.Context, name string, hashes ...int64) error {
	key := bufKey{name, kindHashes}
	for len(hashes) > 0 {
		n := min(len(hashes), b.opts.MaxBatch)
		// A decimal int64 and its comma take at most 21 bytes; the rest
		// is given back below.
		reserved := 21 * n
		if err := b.reserve(ctx, reserved, n); err != nil {
			b.dropRest(err, len(hashes))
			return err
		}
		buf := b.bufLocked(key)
		cost := 0
		for _, h := range hashes[:n] {
			before := len(buf.body)
			if buf.n > 0 {
				buf.body = append(buf.body, ',')
			}
			buf.body = strconv.AppendInt(buf.body, h, 10)
			buf.n++
			cost += len(buf.body) - before
			if buf.n >= b.opts.MaxBatch {
				b.cutLocked(key, buf)
				buf = b.bufLocked(key)
			}
		}
		b.releaseLocked(reserved - cost)
		b.mu.Unlock()
		b.added.Add(uint64(n))
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
		n, cost := 0, 0
		for n < len(ids) && n < b.opts.MaxBatch {
			c := jsonStringLen(ids[n]) + 1
			if n > 0 && cost+c > b.opts.MaxBufferBytes {
				break
			}
			cost += c
			n++
		}
		if cost > b.opts.MaxBufferBytes {
			return fmt.Errorf("client: batcher: a text id of %d bytes is larger than MaxBufferBytes", len(ids[0]))
		}
		if err := b.reserve(ctx, cost, n); err != nil {
			b.dropRest(err, len(ids))
			return err
		}
		buf := b.bufLocked(key)
		used := 0
		for _, s := range ids[:n] {
			before := len(buf.body)
			if buf.n > 0 {
				buf.body = append(buf.body, ',')
			}
			buf.body, _ = appendJSONString(buf.body, s) // checked above
			buf.n++
			used += len(buf.body) - before
			if buf.n >= b.opts.MaxBatch {
				b.cutLocked(key, buf)
				buf = b.bufLocked(key)
			}
		}
		b.releaseLocked(cost - used) // the first id of a buffer has no comma
		b.mu.Unlock()
		b.added.Add(uint64(n))
		ids = ids[n:]
	}
	return nil
}

// dropRest counts ids an add gave up on when the buffer was full.
func (b *Batcher) dropRest(err error, n int) {
	if errors.Is(err, ErrDropped) {
		b.dropped.Add(uint64(n))
	}
}

// reserve waits for cost bytes of room (or fails as Overflow says) and
// returns with b.mu held and the room taken.
func (b *Batcher) reserve(ctx context.Context, cost, n int) error {
	if cost > b.opts.MaxBufferBytes {
		return fmt.Errorf("client: batcher: %d ids need %d bytes, more than MaxBufferBytes %d", n, cost, b.opts.MaxBufferBytes)
	}
	b.mu.Lock()
	for {
		if b.closed {
			b.mu.Unlock()
			return ErrClosed
		}
		if b.used+cost <= b.opts.MaxBufferBytes {
			b.used += cost
			return nil
		}
		if b.opts.Overflow == Drop {
			b.mu.Unlock()
			return ErrDropped
		}
		wait := b.space
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wait:
		}
		b.mu.Lock()
	}
}

// releaseLocked gives back n bytes of room and wakes blocked adds.
func (b *Batcher) releaseLocked(n int) {
	if n == 0 {
		return
	}
	b.used -= n
	close(b.space)
	b.space = make(chan struct{})
}

// bufLocked returns key's buffer, making it.
func (b *Batcher) bufLocked(key bufKey) *buffer {
	buf := b.bufs[key]
	if buf == nil {
		buf = &buffer{}
		switch key.kind {
		case kindInts:
			// Small to start: a sketch that gets a few ids an interval
			// should not hold a full batch's capacity.
			buf.body = make([]byte, 0, 8*min(b.opts.MaxBatch, 512))
		case kindStrings:
			buf.body = append(make([]byte, 0, 4096), `{"ids":[`...)
		case kindHashes:
			buf.body = append(make([]byte, 0, 4096), `{"hashes":[`...)
		}
		b.bufs[key] = buf
	}
	return buf
}

// cutLocked queues key's buffer as a batch and forgets the buffer (so a
// sketch no longer written costs nothing).
func (b *Batcher) cutLocked(key bufKey, buf *buffer) {
	delete(b.bufs, key)
	if buf.n == 0 {
		return
	}
	cost := len(buf.body)
	switch key.kind {
	case kindStrings:
		cost -= len(`{"ids":[`)
		buf.body = append(buf.body, "]}"...)
	case kindHashes:
		cost -= len(`{"hashes":[`)
		buf.body = append(buf.body, "]}"...)
	}
	bt := &batch{key: key, body: buf.body, n: buf.n, cost: cost, done: make(chan struct{})}
	b.queue = append(b.queue, bt)
	b.outstanding[bt] = struct{}{}
	b.work.Signal()
}

// cutAllLocked queues every buffer.
func (b *Batcher) cutAllLocked() {
	for key, buf := range b.bufs {
		b.cutLocked(key, buf)
	}
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
			b.mu.Lock()
			b.cutAllLocked()
			b.mu.Unlock()
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
			bt.err = &BatchError{Sketch: bt.key.name, Count: bt.n, Err: err}
			if b.opts.OnError != nil {
				b.opts.OnError(bt.err.(*BatchError))
			}
		} else {
			b.flushed.Add(uint64(bt.n))
		}
		b.mu.Lock()
		delete(b.outstanding, bt)
		b.releaseLocked(bt.cost)
		b.mu.Unlock()
		bt.body = nil
		close(bt.done)
	}
}

// send makes one flush request, retried as safe unless CountMin.
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
	b.mu.Lock()
	b.cutAllLocked()
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
	b.mu.Lock()
	already := b.closed
	b.closed = true
	close(b.space) // wake blocked adds: they see closed
	b.space = make(chan struct{})
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
	b.mu.Lock()
	used := b.used
	b.mu.Unlock()
	return BatcherStats{
		Added: b.added.Load(), Flushed: b.flushed.Load(), Failed: b.failed.Load(), Dropped: b.dropped.Load(),
		BufferedBytes: used, Requests: b.requests.Load(),
	}
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
