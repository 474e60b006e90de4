package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/poison"
	"github.com/sketchd/sketchd/internal/sketch"
)

// mediaType returns the request's media type (lower case, no parameters)
// and refuses a charset other than UTF-8.
func mediaType(r *http.Request) (string, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return "", nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", errUnsupportedMedia(fmt.Sprintf("Content-Type %q cannot be parsed", clip(ct)))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return "", errUnsupportedMedia(fmt.Sprintf("charset %q is not supported; send UTF-8", clip(cs)))
	}
	return mt, nil
}

// bodyChunk is the first allocation for a body and the least it grows by.
const bodyChunk = 32 << 10

// body is a request body read into memory. Its capacity is reserved
// against Config.MaxBodyMemory until putBody releases it.
type body struct {
	buf      []byte
	reserved int64
}

// Bytes returns the body's bytes, valid until putBody.
func (b *body) Bytes() []byte { return b.buf }

// drop lets go of the bytes early (putBody still releases the
// reservation); Bytes is empty after it.
func (b *body) drop() { b.buf = nil }

// Len returns the body's length.
func (b *body) Len() int { return len(b.buf) }

// readBody reads the whole body, refusing more than limit bytes with
// TooLarge. Memory grows with the bytes that actually arrive (doubling from
// bodyChunk, never more than limit+1), never from what Content-Length
// claims (though a doubling stops short at what it claims), and every
// byte of capacity is first reserved against
// Config.MaxBodyMemory (Unavailable when the reservation fails). The whole
// body must arrive within Config.BodyTimeout, and before the request's
// deadline (408 otherwise). On a write
// route the write slot is taken only once the body is in (see
// limitWrites), so a slow body never holds one. The returned body is the
// caller's until it calls putBody.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) (*body, error) {
	if r.ContentLength > limit {
		s.refused(refusedTooLarge)
		return nil, tooLarge(limit)
	}
	if by, ok := s.bodyDeadline(r); ok {
		// Best effort: a ResponseWriter without deadlines (a test
		// recorder) keeps the server's own read timeout.
		_ = http.NewResponseController(w).SetReadDeadline(by)
	}
	b := &body{}
	if p, ok := s.bufs.Get().(*[]byte); ok {
		b.buf = (*p)[:0]
	}
	if !s.reserveBody(b, int64(cap(b.buf))) {
		b.buf = nil
	}
	rd := http.MaxBytesReader(w, r.Body, limit)
	for {
		if len(b.buf) == cap(b.buf) {
			want := min(max(2*int64(cap(b.buf)), bodyChunk), limit+1)
			if cl := r.ContentLength + 1; cl > int64(cap(b.buf)) && cl < want {
				// The last doubling stops at the declared length (and
				// one byte more, to see the end): a 1.1 MB body takes
				// 1.1 MB, not 2.
				want = cl
			}
			if want <= int64(cap(b.buf)) {
				want = int64(cap(b.buf)) + 1
			}
			if !s.reserveBody(b, want-int64(cap(b.buf))) {
				s.putBody(b)
				s.metrics.Overloaded()
				return nil, sketch.Errorf(sketch.Unavailable, "too many request bodies are being read; retry shortly")
			}
			nb := make([]byte, len(b.buf), want)
			copy(nb, b.buf)
			b.buf = nb
		}
		n, err := rd.Read(b.buf[len(b.buf):cap(b.buf)])
		b.buf = b.buf[:len(b.buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			s.putBody(b)
			return nil, s.bodyError(r, err, limit)
		}
	}
	if g := idem.From(r.Context()); g != nil {
		g.Fingerprint = fingerprint(r, b.buf)
	}
	if err := s.takeWriteSlot(r.Context()); err != nil {
		s.putBody(b)
		return nil, err
	}
	return b, nil
}

// bodyDeadline is when r's body must be in: Config.BodyTimeout from now,
// or the request's deadline if that comes first.
func (s *Server) bodyDeadline(r *http.Request) (time.Time, bool) {
	by, ok := r.Context().Deadline()
	if s.cfg.BodyTimeout > 0 {
		if t := time.Now().Add(s.cfg.BodyTimeout); !ok || t.Before(by) {
			by, ok = t, true
		}
	}
	return by, ok
}

// bodyError classifies a failed body read.
func (s *Server) bodyError(r *http.Request, err error, limit int64) error {
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		s.refused(refusedTooLarge)
		return tooLarge(limit)
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		s.refused(refusedTimeout)
		limit := fmt.Sprintf("%v (-body-timeout)", s.cfg.BodyTimeout)
		if de, _ := r.Context().Value(keyDeadline).(*deadlineError); de != nil && de.due(time.Now()) {
			limit = fmt.Sprintf("the request's %v deadline (%s)", de.timeout, de.flag)
		}
		return &httpError{http.StatusRequestTimeout, "the request body did not arrive within " + limit}
	}
	return sketch.Wrap(sketch.Invalid, err, "the request body could not be read")
}

// reserveBody reserves n more bytes of body memory for b, or reports that
// Config.MaxBodyMemory would be exceeded.
func (s *Server) reserveBody(b *body, n int64) bool {
	if n <= 0 {
		return true
	}
	if s.bodyBytes.Add(n) > s.cfg.MaxBodyMemory {
		s.bodyBytes.Add(-n)
		return false
	}
	b.reserved += n
	return true
}

// putBody releases a body's memory reservation and keeps its buffer for
// reuse unless it grew unusually big.
func (s *Server) putBody(b *body) {
	if b == nil {
		return
	}
	s.bodyBytes.Add(-b.reserved)
	b.reserved = 0
	poison.Release(b.buf)
	if c := cap(b.buf); c > 0 && c <= 4<<20 {
		buf := b.buf[:0]
		s.bufs.Put(&buf)
	}
	b.buf = nil
}

func tooLarge(limit int64) error {
	return sketch.Errorf(sketch.TooLarge, "the request body is larger than the %d-byte limit for this route", limit)
}

// decodeJSON reads a JSON request body of at most Config.MaxQueryBody
// bytes into dst: application/json only
// (an empty body, when allowEmpty, decodes as {} with or without that
// Content-Type), no unknown fields, one value and nothing after it.
// Errors name the offset or field.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, dst any, allowEmpty bool) error {
	return s.decodeJSONLimit(w, r, dst, allowEmpty, s.cfg.MaxQueryBody)
}

// decodeJSONLimit is decodeJSON with a body limit other than
// Config.MaxQueryBody.
func (s *Server) decodeJSONLimit(w http.ResponseWriter, r *http.Request, dst any, allowEmpty bool, limit int64) error {
	mt, err := mediaType(r)
	if err != nil {
		s.refused(refusedMediaType)
		return err
	}
	buf, err := s.readBody(w, r, limit)
	if err != nil {
		return err
	}
	defer s.putBody(buf)
	if buf.Len() == 0 && allowEmpty && (mt == "" || mt == "application/json") {
		return nil
	}
	if mt != "application/json" {
		s.refused(refusedMediaType)
		return errUnsupportedMedia(fmt.Sprintf("send Content-Type: application/json (got %q)", clip(r.Header.Get("Content-Type"))))
	}
	if err := strictUnmarshal(buf.Bytes(), dst); err != nil {
		s.refused(refusedBadInput)
		return err
	}
	return nil
}

// strictUnmarshal decodes exactly one JSON value with no unknown fields,
// keys matched case-sensitively and none repeated.
func strictUnmarshal(b []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return sketch.Errorf(sketch.Invalid, "the JSON body is truncated at offset %d", len(b))
		}
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return sketch.Errorf(sketch.Invalid, "unexpected data after the JSON value at offset %d", dec.InputOffset())
	}
	return exactKeys(b, reflect.TypeOf(dst))
}

// exactKeys refuses what encoding/json lets through: a key that matches a
// field only case-insensitively ("Log2m" would set log2m) and a repeated
// key (the last would silently win), as the ingest parsers do. b is known
// to be well-formed; t is the type decoded into.
func exactKeys(b []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return walkKeys(dec, t, "")
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func walkKeys(dec *json.Decoder, t reflect.Type, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return jsonError(err)
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType {
		t = nil // checked by the id parser
	}
	if tok == nil && t != nil {
		// encoding/json would leave the field at its default.
		if path == "" {
			return sketch.Errorf(sketch.Invalid, "the body is null; send a JSON object")
		}
		return sketch.Errorf(sketch.Invalid, "%s is null; leave it out to take its default", strings.TrimPrefix(path, "."))
	}
	switch tok {
	case json.Delim('{'):
		var fields map[string]reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return jsonError(err)
			}
			k, _ := kt.(string)
			if seen[k] {
				return sketch.Errorf(sketch.Invalid, "key %q is repeated in %s", clip(k), objectName(path))
			}
			seen[k] = true
			var ft reflect.Type
			if fields != nil {
				var ok bool
				if ft, ok = fields[k]; !ok {
					return sketch.Errorf(sketch.Invalid, "unknown field %q in %s (keys are case-sensitive)", clip(k), objectName(path))
				}
			}
			if err := walkKeys(dec, ft, path+"."+k); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walkKeys(dec, et, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	if err != nil {
		return jsonError(err)
	}
	return nil
}

func objectName(path string) string {
	if path == "" {
		return "the body"
	}
	return strings.TrimPrefix(path, ".")
}

// jsonFields maps a struct's JSON keys to their field types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Tag.Get("json") == "" && f.Type.Kind() == reflect.Struct {
			// encoding/json promotes an embedded struct's fields.
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// jsonError turns encoding/json's errors into client-safe details.
func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return sketch.Errorf(sketch.Invalid, "malformed JSON at offset %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the body"
		}
		return sketch.Errorf(sketch.Invalid, "%s at offset %d: a JSON %s cannot be %s", field, typ.Offset, typ.Value, goTypeName(typ.Type.String()))
	case errors.Is(err, io.EOF):
		return sketch.Errorf(sketch.Invalid, "the request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return sketch.Errorf(sketch.Invalid, "the JSON body is truncated")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return sketch.Errorf(sketch.Invalid, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	var se *sketch.Error
	if errors.As(err, &se) {
		return se
	}
	return sketch.Wrap(sketch.Invalid, err, "invalid JSON: "+clip(err.Error()))
}

func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "*int"):
		return "an integer here"
	case t == "string", t == "*string":
		return "a string here"
	case t == "bool", t == "*bool":
		return "a boolean here"
	case strings.HasPrefix(t, "float"), strings.HasPrefix(t, "*float"):
		return "a number here"
	case strings.HasPrefix(t, "[]"):
		return "an array here"
	}
	return "used here"
}

// clip shortens a client-supplied string for a detail message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// query checks that r's query has only the allowed parameters, each at
// most once unless repeatable, and returns it.
func query(r *http.Request, allowed ...string) (map[string][]string, error) {
	q, err := urlQuery(r)
	if err != nil {
		return nil, err
	}
	for k, vs := range q {
		ok := false
		for _, a := range allowed {
			name, repeatable := strings.CutSuffix(a, "*")
			if k == name {
				ok = true
				if len(vs) > 1 && !repeatable {
					return nil, sketch.Errorf(sketch.Invalid, "query parameter %q is given %d times", clip(k), len(vs))
				}
			}
		}
		if !ok {
			return nil, sketch.Errorf(sketch.Invalid, "unknown query parameter %q; this route takes %s", clip(k), strings.Join(trimStars(allowed), ", "))
		}
	}
	return q, nil
}

func trimStars(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.TrimSuffix(s, "*")
	}
	if len(out) == 0 {
		return []string{"no parameters"}
	}
	return out
}

func urlQuery(r *http.Request) (map[string][]string, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, sketch.Errorf(sketch.Invalid, "malformed query string: %s", clip(err.Error()))
	}
	return q, nil
}

func first(q map[string][]string, k string) (string, bool) {
	if vs := q[k]; len(vs) > 0 {
		return vs[0], true
	}
	return "", false
}

// boolParam parses "true" or "false"; absent means def.
func boolParam(q map[string][]string, k string, def bool) (bool, error) {
	v, ok := first(q, k)
	if !ok {
		return def, nil
	}
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, sketch.Errorf(sketch.Invalid, "query parameter %s=%q must be true or false", k, clip(v))
}

// intParam parses a decimal integer in [lo, hi]; absent means def.
func intParam(q map[string][]string, k string, def, lo, hi int) (int, error) {
	v, ok := first(q, k)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, sketch.Errorf(sketch.Invalid, "query parameter %s=%q must be an integer from %d to %d", k, clip(v), lo, hi)
	}
	return n, nil
}
