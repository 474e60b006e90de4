package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// ErrRedisReply is wrapped by errors about a reply that is not what RESP
// allows for the command sent.
var ErrRedisReply = errors.New("unexpected redis reply")

// redisDriver holds what every Redis worker shares: the PFADD header of
// each key and the prebuilt element blocks.
type redisDriver struct {
	cfg     *config
	headers [][]byte // "*N\r\n$5\r\nPFADD\r\n$k\r\nkey\r\n" per key
	pool    [][]byte // prebuilt blocks of -batch bulk strings, read-only once built
}

func newRedisDriver(cfg *config) *redisDriver {
	d := &redisDriver{cfg: cfg}
	for _, n := range cfg.names() {
		d.headers = append(d.headers, appendRESPHeader(nil, n, cfg.batch))
	}
	return d
}

// buildPool prebuilds n element blocks (block j holds batch index j's ids).
func (d *redisDriver) buildPool(n int) {
	g := newIDGen(d.cfg.dist, d.cfg.ids, d.cfg.zipfS, d.cfg.seed, poolStream)
	d.pool = buildPool(n, d.cfg.batch, g, appendRESPArgs)
}

// newWorker returns worker i and opens its connection, so connecting is
// not part of the measurement (and a wrong address fails before the pool
// is built).
func (d *redisDriver) newWorker(ctx context.Context, i int) (*redisWorker, error) {
	w := &redisWorker{
		d:   d,
		gen: newIDGen(d.cfg.dist, d.cfg.ids, d.cfg.zipfS, d.cfg.seed, uint64(i)+1),
		vec: make([][]byte, 0, 2*d.cfg.pipeline),
	}
	if d.cfg.prebuilt == 0 {
		w.ids = make([]int64, d.cfg.batch)
		w.blocks = make([][]byte, d.cfg.pipeline)
		for j := range w.blocks {
			w.blocks[j] = make([]byte, 0, bodyCap(d.cfg.batch))
		}
	}
	if err := w.connect(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// redisWorker owns one connection and writes pipelines of PFADD commands
// straight onto it.
type redisWorker struct {
	d      *redisDriver
	conn   net.Conn
	rd     *bufio.Reader
	gen    *idGen
	ids    []int64
	blocks [][]byte // element blocks built during the run, one per pipelined command
	vec    [][]byte // the pipeline as a list of buffers for one writev
}

// connect dials the server and authenticates when a token is set.
func (w *redisWorker) connect(ctx context.Context) error {
	dialer := net.Dialer{Timeout: 5 * time.Second}
	c, err := dialer.DialContext(ctx, "tcp", w.d.cfg.redis)
	if err != nil {
		return fmt.Errorf("redis %s: %w", w.d.cfg.redis, err)
	}
	w.conn = c
	if w.rd == nil {
		w.rd = bufio.NewReaderSize(c, 64<<10)
	} else {
		w.rd.Reset(c)
	}
	if w.d.cfg.token == "" {
		return nil
	}
	tok := w.d.cfg.token
	cmd := fmt.Sprintf("*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(tok), tok)
	_ = c.SetDeadline(time.Now().Add(w.d.cfg.timeout))
	if _, err := io.WriteString(c, cmd); err != nil {
		w.drop()
		return fmt.Errorf("redis %s: auth: %w", w.d.cfg.redis, err)
	}
	line, err := w.rd.ReadSlice('\n')
	if err != nil {
		w.drop()
		return fmt.Errorf("redis %s: auth: %w", w.d.cfg.redis, err)
	}
	if len(line) == 0 || line[0] != '+' {
		w.drop()
		return fmt.Errorf("redis %s: auth: %q: %w", w.d.cfg.redis, bytes.TrimSpace(line), ErrRedisReply)
	}
	return nil
}

// drop closes the connection; the next unit reconnects.
func (w *redisWorker) drop() {
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

func (w *redisWorker) close() { w.drop() }

// do writes n PFADD commands in one go and reads their n replies. Command i
// of unit batch has run-wide index batch·pipeline+i, which picks its key and
// its ids.
func (w *redisWorker) do(ctx context.Context, batch uint64, n int) outcome {
	d := w.d
	o := outcome{requests: n, idsSent: int64(n) * int64(d.cfg.batch), failKey: "transport"}
	if w.conn == nil {
		if err := w.connect(ctx); err != nil {
			o.canceled = ctx.Err() != nil
			o.failKey = "connect"
			return o
		}
	}
	w.vec = w.vec[:0]
	for i := range n {
		cmd := batch*uint64(d.cfg.pipeline) + uint64(i)
		sk := pickSketch(cmd, len(d.headers), d.cfg.random, w.gen.rng)
		var block []byte
		if len(d.pool) > 0 {
			block = d.pool[cmd%uint64(len(d.pool))]
		} else {
			w.gen.fill(w.ids, cmd)
			w.blocks[i] = appendRESPArgs(w.blocks[i][:0], w.ids)
			block = w.blocks[i]
		}
		w.vec = append(w.vec, d.headers[sk], block)
		o.bytes += int64(len(d.headers[sk]) + len(block))
	}

	conn := w.conn
	_ = conn.SetDeadline(time.Now().Add(d.cfg.timeout))
	stopWatch := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stopWatch()

	bufs := net.Buffers(w.vec)
	if _, err := bufs.WriteTo(conn); err != nil {
		w.drop()
		o.canceled = ctx.Err() != nil
		return o
	}
	for range n {
		line, err := w.rd.ReadSlice('\n')
		if err != nil {
			w.drop()
			o.canceled = ctx.Err() != nil
			if errors.Is(err, bufio.ErrBufferFull) {
				o.failKey = "protocol"
			}
			break
		}
		switch line[0] {
		case ':', '+':
			o.ok++
		case '-':
			o.failKey = redisErrorKey(line)
		default:
			// Not a reply PFADD gives: the stream can no longer be trusted.
			w.drop()
			o.failKey = "protocol"
			o.ids = int64(o.ok) * int64(d.cfg.batch)
			return o
		}
	}
	o.ids = int64(o.ok) * int64(d.cfg.batch)
	return o
}

// redisErrorKey names a failure by the error reply's first word:
// "-WRONGTYPE Operation…" counts as "redis:WRONGTYPE".
func redisErrorKey(line []byte) string {
	msg := bytes.TrimRight(line[1:], "\r\n")
	if i := bytes.IndexByte(msg, ' '); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) == 0 || len(msg) > 32 {
		return "redis:error"
	}
	return "redis:" + string(msg)
}
