package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/kll"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// maxImportMemory bounds the memory of the sketches one import decodes
// (256 MiB: 16,384 full log2m-14 HLLs, 2,048 of log2m 17); past it the
// request is a 413 before anything is written.
const maxImportMemory = 256 << 20

// handleBucketImport imports one bucket from an uploaded sketch (PUT
// replaces it, POST merges into it), in any format the series' kind
// reads; ?fold=true folds a sketch of more registers down to the
// series' parameters.
func (s *Server) handleBucketImport(replace bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		name, q, ss, err := s.seriesRoute(r, "format", "fold")
		if err != nil {
			return err
		}
		level, start, err := bucketParams(r)
		if err != nil {
			return err
		}
		fold, err := boolParam(q, "fold", false)
		if err != nil {
			return err
		}
		sk, err := s.upload(w, r, q, seriesItems(ss, name))
		if err != nil {
			return err
		}
		return s.commit(w, r, importRendered, func(ctx context.Context) (idem.Result, error) {
			writes, err := ss.ImportSeries(ctx, name, replace, func(spec *series.Spec) ([]series.Import, error) {
				c, err := sketch.Conform(sk, spec.Params, fold)
				if err != nil {
					return nil, sketch.Prefixed(err, fmt.Sprintf("series %q: ", name))
				}
				return []series.Import{{Key: series.Key{Level: level, Start: start}, Sketch: c}}, nil
			})
			return idem.Result{Writes: writes}, err
		})
	}
}

// handleBucketsImport imports many buckets from an NDJSON body, one
// bucket a line (importLine), all or nothing: PUT replaces each, POST
// merges into each.
func (s *Server) handleBucketsImport(replace bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		name, q, ss, err := s.seriesRoute(r, "format", "fold")
		if err != nil {
			return err
		}
		fold, err := boolParam(q, "fold", false)
		if err != nil {
			return err
		}
		format := uploadFormat(q)
		mt, err := mediaType(r)
		if err != nil {
			s.refused(refusedMediaType)
			return err
		}
		if mt != "application/x-ndjson" {
			s.refused(refusedMediaType)
			return errUnsupportedMedia(`send application/x-ndjson: one {"level":…,"start":…,"bytes":…} a line`)
		}
		body, err := s.readBody(w, r, s.cfg.MaxBody)
		if err != nil {
			return err
		}
		defer s.putBody(body)
		lines, err := parseImportLines(body.Bytes(), series.MaxImports)
		if err != nil {
			s.refused(refusedBadInput)
			return err
		}
		return s.commit(w, r, importRendered, func(ctx context.Context) (idem.Result, error) {
			writes, err := ss.ImportSeries(ctx, name, replace, func(spec *series.Spec) ([]series.Import, error) {
				out := make([]series.Import, len(lines))
				var mem int64
				for i, l := range lines {
					raw := l.raw
					if p, ok := spec.Params.(sketch.KLLParams); ok && p.Items == kll.Longs && undeclaredKLL(raw, format) {
						// The series says what the bytes do not.
						raw = kll.MarkLongs(raw)
					}
					sk, err := sketch.DecodeUpload(raw, format)
					if err == nil {
						sk, err = sketch.Conform(sk, spec.Params, fold)
					}
					if err != nil {
						return nil, sketch.Prefixed(err, fmt.Sprintf("line %d: ", l.line))
					}
					if mem += sk.MemoryBytes(); mem > maxImportMemory {
						return nil, sketch.Errorf(sketch.TooLarge, "line %d: the buckets decoded so far take more than %d MiB; one import may decode at most that: send fewer lines a request", l.line, maxImportMemory>>20)
					}
					out[i] = series.Import{Key: series.Key{Level: l.level, Start: l.start}, Sketch: sk}
				}
				return out, nil
			})
			return idem.Result{Writes: writes}, err
		})
	}
}

// importRendered renders an import's answer: the buckets it wrote.
func importRendered(res idem.Result) (*answer, error) {
	return jsonAnswer(http.StatusOK, importDTO(res.Writes))
}

// bucketParams reads {level} and {start} of a bucket's path: a level
// name and an RFC 3339 time (percent-escaped or not).
func bucketParams(r *http.Request) (series.Level, time.Time, error) {
	lv := chi.URLParam(r, "level")
	level, err := series.ParseLevel(lv)
	if err != nil {
		return 0, time.Time{}, sketch.Errorf(sketch.Invalid, "path: %s", clip(err.Error()))
	}
	st := chi.URLParam(r, "start")
	if u, err := url.PathUnescape(st); err == nil {
		st = u
	}
	start, err := time.Parse(time.RFC3339, st)
	if err != nil {
		return 0, time.Time{}, sketch.Errorf(sketch.Invalid, "path: start %q is not an RFC 3339 time, like 2026-11-17T00:00:00Z", clip(st))
	}
	return level, start, nil
}

// importLine is one line of a bulk import: the bucket and the sketch's
// bytes.
type importLine struct {
	line  int // 1-based, in the body
	level series.Level
	start time.Time
	raw   []byte
}

// parseImportLines reads a bulk import body: NDJSON, one object a line,
// {"level":"day","start":"2026-01-01T00:00:00Z","bytes":"…"} with
// exactly those members. bytes is a sketch in any format sketchd reads,
// as PostgreSQL prints it (\x then hex digits) or in standard base64
// (padded). Blank lines are skipped; a carriage return before a line
// feed is allowed. Errors are Invalid and name the line: a line that is
// not such an object (unknown or missing members, trailing data), an
// unknown level, a start that is not RFC 3339, bytes that are neither
// form. More than maxLines lines is TooLarge, found before the lines past
// it are read. The raw bytes are copies, at most as long as the body.
func parseImportLines(body []byte, maxLines int) ([]importLine, error) {
	var out []importLine
	for n := 1; len(body) > 0; n++ {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(out) == maxLines {
			return nil, sketch.Errorf(sketch.TooLarge, "more than %d buckets; one import takes at most %d lines", maxLines, maxLines)
		}
		l, err := parseImportLine(line)
		if err != nil {
			return nil, sketch.Errorf(sketch.Invalid, "line %d: %s", n, err)
		}
		l.line = n
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, sketch.Errorf(sketch.Invalid, `the body has no lines; send one {"level":…,"start":…,"bytes":…} a line`)
	}
	return out, nil
}

func parseImportLine(b []byte) (importLine, error) {
	var v struct {
		Level *string `json:"level"`
		Start *string `json:"start"`
		Bytes *string `json:"bytes"`
	}
	if err := strictUnmarshal(b, &v); err != nil {
		detail := err.Error()
		if e, ok := err.(*sketch.Error); ok {
			detail = e.Detail
		}
		return importLine{}, fmt.Errorf("not a JSON object of level, start and bytes: %s", detail)
	}
	switch {
	case v.Level == nil:
		return importLine{}, fmt.Errorf("level is missing")
	case v.Start == nil:
		return importLine{}, fmt.Errorf("start is missing")
	case v.Bytes == nil:
		return importLine{}, fmt.Errorf("bytes is missing")
	}
	var l importLine
	var err error
	if l.level, err = series.ParseLevel(*v.Level); err != nil {
		return importLine{}, fmt.Errorf("%s", clip(err.Error()))
	}
	if l.start, err = time.Parse(time.RFC3339, *v.Start); err != nil {
		return importLine{}, fmt.Errorf("start %q is not an RFC 3339 time", clip(*v.Start))
	}
	if h, ok := strings.CutPrefix(*v.Bytes, `\x`); ok {
		if l.raw, err = hex.DecodeString(h); err != nil {
			return importLine{}, fmt.Errorf(`bytes start with \x but are not hex: %s`, clip(err.Error()))
		}
	} else if l.raw, err = base64.StdEncoding.DecodeString(*v.Bytes); err != nil {
		return importLine{}, fmt.Errorf(`bytes are neither \x and hex nor base64: %s`, clip(err.Error()))
	}
	return l, nil
}

// importResponse answers an import: every bucket written, in (level,
// start) order, with what was done to it.
type importResponse struct {
	Buckets []importedBucket `json:"buckets"`
}

type importedBucket struct {
	Level  string    `json:"level"`
	Start  time.Time `json:"start"`
	Action string    `json:"action"`
}

func importDTO(ws []series.Write) importResponse {
	resp := importResponse{Buckets: make([]importedBucket, len(ws))}
	for i, w := range ws {
		resp.Buckets[i] = importedBucket{Level: w.Level.String(), Start: w.Start, Action: w.Action.String()}
	}
	return resp
}
