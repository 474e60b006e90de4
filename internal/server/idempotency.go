package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/murmur"
	"github.com/sketchd/sketchd/internal/sketch"
)

// Idempotency keys (the IETF HTTPAPI draft "The Idempotency-Key HTTP
// Header Field"). A write sent with Idempotency-Key applies once: the
// store keeps the key, the request's fingerprint and the answer in the
// same log record or transaction as the write, and a retry with the same
// key and the same request gets that answer again, marked
// Idempotent-Replayed: true, without applying anything. The same key with
// another request is a 422; a retry while the first request is still
// running on this node is a 409 (on another node of a shared database it
// waits for the first to commit, then replays). Keys are scoped by bearer
// token (and, for a token limited to prefixes, by its prefixes: see
// tenant.scope) and by the sketch or series the route names.

const (
	headerKey      = "Idempotency-Key"
	headerReplayed = "Idempotent-Replayed"
)

// KeyStore is the part of the contract that keeps idempotency keys. A
// write whose ctx carries an idem.Guard claims the guard's ID before it
// changes anything: if a record of it is kept (and its window has not run
// out), the write changes nothing and fails with idem.ErrTaken. Otherwise
// it seals the guard with what it returns (idem.Guard.Seal) once its
// changes are decided, and keeps the record (fingerprint, answer, commit
// time) in the same atomic, durable write: a write that returns nil has
// its record kept, and one that changed nothing keeps none. Keys are kept
// for the backend's window and within its bound (the oldest go first).
type KeyStore interface {
	// Remembered returns the record kept for id, if any and its window has
	// not run out. A record whose write is still being made durable is
	// waited for.
	Remembered(ctx context.Context, id idem.ID) (idem.Record, bool, error)
}

// keyError is a refusal about an idempotency key, with its own problem
// type so a client tells "in progress, ask again" from other conflicts.
type keyError struct {
	status int
	kind   string
	detail string
}

func (e *keyError) Error() string { return e.detail }

const (
	problemKeyInFlight = "idempotency-key-in-flight"
	problemKeyReused   = "idempotency-key-reused"
)

// parseKey reads the Idempotency-Key field: one field whose value is a
// Structured Fields String (RFC 8941 §3.3.3: "…", printable ASCII, with \"
// and \\ escapes), as the draft specifies, or, as many clients send it,
// a bare run of visible ASCII without quotes, backslashes or commas. Both
// spell the same key. The key is 1 to idem.MaxKeyLen bytes.
func parseKey(fields []string) (string, error) {
	if len(fields) != 1 {
		return "", sketch.Errorf(sketch.Invalid, "send one %s header, not %d", headerKey, len(fields))
	}
	v := trimOWS(fields[0])
	var key []byte
	if len(v) > 0 && v[0] == '"' {
		for i := 1; ; i++ {
			if i >= len(v) {
				return "", sketch.Errorf(sketch.Invalid, "%s: the quoted string is not closed", headerKey)
			}
			c := v[i]
			switch {
			case c == '\\':
				i++
				if i >= len(v) || v[i] != '"' && v[i] != '\\' {
					return "", sketch.Errorf(sketch.Invalid, `%s: only \" and \\ may be escaped`, headerKey)
				}
				key = append(key, v[i])
			case c == '"':
				if i != len(v)-1 {
					return "", sketch.Errorf(sketch.Invalid, "%s: characters after the quoted string", headerKey)
				}
				goto done
			case c < 0x20 || c > 0x7e:
				return "", sketch.Errorf(sketch.Invalid, "%s: byte %#02x at %d is not printable ASCII", headerKey, c, i)
			default:
				key = append(key, c)
			}
			if len(key) > idem.MaxKeyLen {
				return "", sketch.Errorf(sketch.Invalid, "%s is longer than %d bytes", headerKey, idem.MaxKeyLen)
			}
		}
	} else {
		for i := 0; i < len(v); i++ {
			if c := v[i]; c <= 0x20 || c > 0x7e || c == '"' || c == '\\' || c == ',' {
				return "", sketch.Errorf(sketch.Invalid, "%s: byte %#02x at %d is not allowed; send a quoted string (\"…\") or visible ASCII without quotes, backslashes, commas or spaces", headerKey, c, i)
			}
		}
		key = []byte(v)
	}
done:
	switch {
	case len(key) == 0:
		return "", sketch.Errorf(sketch.Invalid, "%s is empty", headerKey)
	case len(key) > idem.MaxKeyLen:
		return "", sketch.Errorf(sketch.Invalid, "%s is longer than %d bytes", headerKey, idem.MaxKeyLen)
	}
	return string(key), nil
}

// trimOWS drops the spaces and tabs around a field value.
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// fingerprint identifies a request for its key: the 128-bit MurmurHash3
// of its method, path, query (in canonical order) and media type, then
// the body's length and CRC-32C (the draft's "checksum of the entire
// request payload"). It tells a retry from another request sent with the
// same key by mistake, not an attacker (who could only confuse their own
// keys): two bodies of one length under one key are told apart but for a
// chance of 2^-32. It reads every byte of every keyed write, so it uses
// the checksum the processor computes (several GB/s; a 128-bit hash of a
// 10,000-id body cost a tenth of the request).
func fingerprint(r *http.Request, body []byte) [32]byte {
	mt, _ := mediaType(r)
	var out [32]byte
	h1, h2 := murmur.String(r.Method+"\n"+r.URL.Path+"\n"+r.URL.Query().Encode()+"\n"+mt, 0)
	binary.BigEndian.PutUint64(out[0:], h1)
	binary.BigEndian.PutUint64(out[8:], h2)
	binary.BigEndian.PutUint64(out[16:], uint64(len(body)))
	binary.BigEndian.PutUint32(out[24:], crc32.Checksum(body, castagnoli))
	return out
}

// inflight holds the keys of requests running on this node.
type inflight struct {
	mu   sync.Mutex
	keys map[idem.ID]struct{}
}

// take claims id for a request, or reports that another holds it; release
// gives it back.
func (f *inflight) take(id idem.ID) (release func(), ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, busy := f.keys[id]; busy {
		return nil, false
	}
	if f.keys == nil {
		f.keys = map[idem.ID]struct{}{}
	}
	f.keys[id] = struct{}{}
	return func() {
		f.mu.Lock()
		delete(f.keys, id)
		f.mu.Unlock()
	}, true
}

// idempotent handles Idempotency-Key on a write route: it checks the
// key, holds it for the request (409 for another request holding it),
// replays a recorded answer (422 if the request differs), or runs the
// handler with an idem.Guard in its context, which the store write
// claims and records.
func (s *Server) idempotent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fields := r.Header.Values(headerKey)
		if len(fields) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		id, err := s.keyID(r, fields)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		ks, ok := s.store.(KeyStore)
		if !ok {
			s.writeProblem(w, r, &httpError{http.StatusNotImplemented, "this storage backend does not keep idempotency keys; send the request without " + headerKey})
			return
		}
		release, ok := s.inflight.take(id)
		if !ok {
			w.Header().Set("Retry-After", "1")
			s.writeProblem(w, r, &keyError{http.StatusConflict, problemKeyInFlight,
				"a request with this " + headerKey + " is still in progress; retry once it has been answered"})
			return
		}
		defer release()
		g := &idem.Guard{ID: id, Fingerprint: fingerprint(r, nil)}
		r = r.WithContext(idem.With(r.Context(), g))
		rec, found, err := ks.Remembered(r.Context(), id)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if !found {
			next.ServeHTTP(w, r)
			return
		}
		// Read the body only to fingerprint it (readBody does).
		b, err := s.readBody(w, r, s.cfg.MaxBody)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		s.putBody(b)
		if err := s.replay(w, g, rec); err != nil {
			s.writeProblem(w, r, err)
		}
	})
}

type scopeKey struct{}

// withScope returns ctx carrying the scope of the request's keys.
func withScope(ctx context.Context, scope string) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope)
}

// scopeOf returns the scope of the request's keys: a digest of its bearer
// token (tenant.scope), or "" on a server without tokens.
func scopeOf(ctx context.Context) string {
	s, _ := ctx.Value(scopeKey{}).(string)
	return s
}

// keyID validates the key and scopes it by token and route target.
func (s *Server) keyID(r *http.Request, fields []string) (idem.ID, error) {
	key, err := parseKey(fields)
	if err != nil {
		return idem.ID{}, err
	}
	id := idem.ID{Scope: scopeOf(r.Context()), Key: key}
	if chi.URLParam(r, "name") != "" {
		if id.Target, err = nameParam(r); err != nil {
			return idem.ID{}, err
		}
	}
	return id, nil
}

// replay answers a retry with the recorded answer, or refuses a request
// that differs from the one that used the key.
func (s *Server) replay(w http.ResponseWriter, g *idem.Guard, rec idem.Record) error {
	if rec.Fingerprint != g.Fingerprint {
		return &keyError{http.StatusUnprocessableEntity, problemKeyReused,
			"this " + headerKey + " was used for a different request (method, path, query or body); send a new key for a new request"}
	}
	a, err := decodeAnswer(rec.Answer)
	if err != nil {
		return fmt.Errorf("the answer kept for an idempotency key: %w", err)
	}
	w.Header().Set(headerReplayed, "true")
	s.metrics.Replayed()
	a.write(w)
	return nil
}

// commit runs a store write and sends its answer, which render builds from
// what the write returned. Under an Idempotency-Key the store has rendered
// the answer (with render) before it committed and kept it with the
// write: exactly that answer is sent. A key another request recorded
// meanwhile (on another node) turns into a replay, or a 422.
func (s *Server) commit(w http.ResponseWriter, r *http.Request, render func(idem.Result) (*answer, error), write func(ctx context.Context) (idem.Result, error)) error {
	g := idem.From(r.Context())
	if g == nil {
		res, err := write(r.Context())
		if err != nil {
			return err
		}
		a, err := render(res)
		if err != nil {
			return err
		}
		a.write(w)
		return nil
	}
	g.Render = func(res idem.Result) ([]byte, error) {
		a, err := render(res)
		if err != nil {
			return nil, err
		}
		return a.encode()
	}
	_, err := write(r.Context())
	switch {
	case errors.Is(err, idem.ErrTaken):
		rec, found, err := s.store.(KeyStore).Remembered(r.Context(), g.ID)
		if err != nil {
			return err
		}
		if !found {
			return sketch.Errorf(sketch.Unavailable, "another request with this %s was being applied; retry", headerKey)
		}
		return s.replay(w, g, rec)
	case errors.Is(err, idem.ErrInFlight):
		w.Header().Set("Retry-After", "1")
		return &keyError{http.StatusConflict, problemKeyInFlight, "a request with this " + headerKey + " is still in progress; retry once it has been answered"}
	case err != nil:
		return err
	}
	b := g.Answer()
	if b == nil {
		return errors.New("the store applied a write under an idempotency key without recording it")
	}
	a, err := decodeAnswer(b)
	if err != nil {
		return err
	}
	a.write(w)
	return nil
}

// answer is a write's HTTP answer: what is sent, and what an idempotency
// key keeps.
type answer struct {
	status int
	// contentType and location are the headers an answer carries
	// (Content-Length follows from body).
	contentType string
	location    string
	body        []byte
}

// maxAnswer bounds an encoded answer (write answers are a few hundred
// bytes: a description, a count).
const maxAnswer = 64 << 10

// jsonAnswer renders v as writeJSON does.
func jsonAnswer(status int, v any) (*answer, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return &answer{status: status, contentType: "application/json", body: buf.Bytes()}, nil
}

// write sends a.
func (a *answer) write(w http.ResponseWriter) {
	if a.location != "" {
		w.Header().Set("Location", a.location)
	}
	if a.contentType != "" {
		w.Header().Set("Content-Type", a.contentType)
	}
	if a.status != http.StatusNoContent {
		w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
	}
	w.WriteHeader(a.status)
	w.Write(a.body) // the status is sent: a failed write is the client's loss
}

// An encoded answer is
//
//	byte 1 (format) | uint16 status | uvarint-length Content-Type |
//	uvarint-length Location | uvarint-length body | CRC-32C of all before
//
// so a damaged record is refused before it is replayed.
const answerFormat = 1

func (a *answer) encode() ([]byte, error) {
	b := []byte{answerFormat}
	b = binary.BigEndian.AppendUint16(b, uint16(a.status))
	for _, f := range [][]byte{[]byte(a.contentType), []byte(a.location), a.body} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	if len(b) > maxAnswer {
		return nil, fmt.Errorf("an answer of %d bytes is over the %d-byte bound for idempotency keys", len(b), maxAnswer)
	}
	return b, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var errAnswer = errors.New("damaged answer record")

// decodeAnswer reads what encode wrote. Anything else (a bad checksum, a
// length past the end, a status outside 200..599, bytes left over) is an
// error wrapping errAnswer.
func decodeAnswer(b []byte) (*answer, error) {
	if len(b) < 1+2+3+4 || len(b) > maxAnswer {
		return nil, fmt.Errorf("%w: %d bytes", errAnswer, len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", errAnswer)
	}
	if body[0] != answerFormat {
		return nil, fmt.Errorf("%w: format %d", errAnswer, body[0])
	}
	a := &answer{status: int(binary.BigEndian.Uint16(body[1:]))}
	if a.status < 200 || a.status > 599 {
		return nil, fmt.Errorf("%w: status %d", errAnswer, a.status)
	}
	rest := body[3:]
	var fields [3][]byte
	for i := range fields {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, fmt.Errorf("%w: field %d runs past the end", errAnswer, i)
		}
		fields[i] = rest[k : k+int(n)]
		rest = rest[k+int(n):]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the body", errAnswer, len(rest))
	}
	a.contentType, a.location, a.body = string(fields[0]), string(fields[1]), bytes.Clone(fields[2])
	return a, nil
}
