package server

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/kll"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// handleRawGet downloads a sketch's encoding: binary with an ETag, or
// ?format=hex as PostgreSQL prints a bytea/hll (\x and lower-case hex);
// ?log2m= folds an HLL on the way out; ?layout= picks a freq sketch's
// summary layout and ?compressed=true asks a theta sketch for serial
// version 4 (downloadParams).
func (s *Server) handleRawGet(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	q, err := query(r, "format", "log2m", "layout", "compressed")
	if err != nil {
		return err
	}
	format, err := rawFormat(q)
	if err != nil {
		return err
	}
	dl, err := downloadParams(q)
	if err != nil {
		return err
	}
	var b []byte
	if _, ok := first(q, "log2m"); ok {
		if dl != (sketch.Download{}) {
			return sketch.Errorf(sketch.Invalid, "log2m folds an hll; layout and compressed apply to freq and theta sketches")
		}
		log2m, err := intParam(q, "log2m", 0, hll.MinLog2m, hll.MaxLog2m)
		if err != nil {
			return err
		}
		err = s.viewHLLs(r.Context(), []string{name}, func(hs []*hll.Sketch) error {
			f, err := foldHLL(hs[0], log2m, hs[0].Params().Regwidth)
			if err != nil {
				return err
			}
			b, _ = f.MarshalBinary()
			return nil
		})
		if err != nil {
			return err
		}
	} else {
		err = s.store.View(r.Context(), []string{name}, func(sks []sketch.Sketch) error {
			b, err = sketch.AppendDownload(nil, sks[0], dl)
			return err
		})
		if err != nil {
			return err
		}
	}
	h := fnv.New64a()
	h.Write(b)
	etag := `"` + strconv.FormatUint(h.Sum64(), 16) + `"`
	if format == "hex" {
		etag = `"hex-` + etag[1:]
	}
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "no-cache")
	if noneMatch(r.Header.Values("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	writeRaw(w, b, format == "hex")
	return nil
}

// rawFormat reads ?format= of a download: "binary" (the default) or
// "hex".
func rawFormat(q map[string][]string) (string, error) {
	format, ok := first(q, "format")
	if ok && format != "hex" && format != "binary" {
		return "", sketch.Errorf(sketch.Invalid, "query parameter format=%q must be binary or hex", clip(format))
	}
	return format, nil
}

// downloadParams reads how a download is written: ?layout=java|cpp (freq
// summaries; java by default) and ?compressed=true|false (theta serial
// version 4). AppendDownload refuses either on a kind it does not fit.
func downloadParams(q map[string][]string) (sketch.Download, error) {
	var d sketch.Download
	if v, ok := first(q, "layout"); ok {
		switch l := sketch.Layout(v); l {
		case sketch.LayoutJava, sketch.LayoutCPP:
			d.Layout = l
		default:
			return d, sketch.Errorf(sketch.Invalid, "query parameter layout=%q must be java (Java's IntegerSummary, the default) or cpp (C++ and Python's int32)", clip(v))
		}
	}
	c, err := boolParam(q, "compressed", false)
	d.Compressed = c
	return d, err
}

// writeRaw answers a sketch's encoding: binary, or as PostgreSQL prints a
// bytea or hll (\x and lower-case hex) when asHex.
func writeRaw(w http.ResponseWriter, b []byte, asHex bool) {
	if asHex {
		out := make([]byte, 2+hex.EncodedLen(len(b)))
		out[0], out[1] = '\\', 'x'
		hex.Encode(out[2:], b)
		b = out
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b) // the status is sent: a failed write is the client's loss
}

// upload reads a sketch sent as binary (application/octet-stream) or as
// PostgreSQL's text form (text/plain, \x then hex digits), of whichever
// registered kind its bytes are, decoded as strictly as the format allows.
//
// q holds the upload's ?format= (a sketch type; absent to recognize the
// format from the bytes' preamble) and ?items=: long takes a KLL upload
// as a sketch of longs (items=double checks that the bytes are not marked
// as longs). DataSketches' libraries mostly do not say in their bytes
// whether a KLL sketch keeps doubles or longs (kll.Declared): without
// ?items=, itemsOf says it, from the sketch or series the upload goes to.
func (s *Server) upload(w http.ResponseWriter, r *http.Request, q map[string][]string, itemsOf kllItemsOf) (sketch.Sketch, error) {
	format := uploadFormat(q)
	items, hasItems := first(q, "items")
	if hasItems && items != "long" && items != "double" {
		return nil, sketch.Errorf(sketch.Invalid, "query parameter items=%q must be double or long", clip(items))
	}
	mt, err := mediaType(r)
	if err != nil {
		s.refused(refusedMediaType)
		return nil, err
	}
	if mt != "application/octet-stream" && mt != "text/plain" {
		s.refused(refusedMediaType)
		return nil, errUnsupportedMedia("upload a sketch as application/octet-stream (its bytes) or text/plain (\\x followed by hex, as PostgreSQL prints it)")
	}
	body, err := s.readBody(w, r, s.cfg.MaxBody)
	if err != nil {
		return nil, err
	}
	defer s.putBody(body)
	raw := body.Bytes()
	if mt == "text/plain" {
		text := bytes.TrimSpace(raw)
		text, ok := bytes.CutPrefix(text, []byte(`\x`))
		if !ok {
			s.refused(refusedBadInput)
			return nil, sketch.Errorf(sketch.Invalid, `a text upload starts with \x, as PostgreSQL prints an hll`)
		}
		raw = make([]byte, hex.DecodedLen(len(text)))
		if _, err := hex.Decode(raw, text); err != nil {
			s.refused(refusedBadInput)
			return nil, sketch.Errorf(sketch.Invalid, "the text upload is not hex: %s", clip(err.Error()))
		}
	}
	if !hasItems && undeclaredKLL(raw, format) {
		t, err := itemsOf(r.Context())
		if err != nil && !kllDamaged(raw) {
			if sketch.KindOf(err) == sketch.Invalid {
				s.refused(refusedBadInput)
			}
			return nil, err
		}
		if t == kll.Longs {
			raw = kll.MarkLongs(raw)
		}
	}
	if hasItems {
		if !kll.Sniff(raw) {
			s.refused(refusedBadInput)
			return nil, sketch.Errorf(sketch.Invalid, "items applies to kll uploads; these bytes are not a kll sketch")
		}
		if items == "long" {
			raw = kll.MarkLongs(raw)
		} else if t, err := kll.TypeOf(raw); err == nil && t == kll.Longs {
			s.refused(refusedBadInput)
			return nil, sketch.Errorf(sketch.Invalid, "items=double, but these bytes are marked as a kll sketch of longs (byte 7 is 1)")
		}
	}
	sk, err := sketch.DecodeUpload(raw, format)
	if err != nil {
		s.refused(refusedBadInput)
		return nil, err
	}
	return sk, nil
}

// kllItemsOf says what a KLL upload whose bytes do not say it keeps:
// doubles or longs.
type kllItemsOf func(context.Context) (kll.ItemType, error)

// undeclaredKLL reports whether raw is a KLL upload (by its preamble, and
// ?format= if given) whose bytes do not say whether it keeps doubles or
// longs: every library's but Java 3.2 to 4.0's sketch of doubles.
func undeclaredKLL(raw []byte, format sketch.Type) bool {
	if format != "" && format != sketch.TypeKLL || !kll.Sniff(raw) {
		return false
	}
	_, ok := kll.Declared(raw)
	return !ok
}

// kllDamaged reports whether raw decodes as a KLL sketch of neither
// doubles nor longs: then what it keeps does not matter, and the
// decoder's complaint (as doubles) is the answer.
func kllDamaged(raw []byte) bool {
	if _, err := kll.Decode[float64](raw); err == nil {
		return false
	}
	_, err := kll.Decode[int64](kll.MarkLongs(raw))
	return err != nil
}

// storedItems says what a KLL upload to the sketch name keeps: what the
// KLL sketch stored there keeps. A missing sketch is refused, a 400 naming
// ?items= when the upload would create it (PUT; nothing says what its
// values are) and the store's 404 when it would merge into it; a sketch
// of another kind is the Conflict the write would give. It is read before
// the write, not in it: a sketch replaced in between by one of the other
// item type makes the write a Conflict (the kinds differ), never a
// misreading.
func (s *Server) storedItems(name string, creates bool) kllItemsOf {
	return func(ctx context.Context) (kll.ItemType, error) {
		info, err := s.store.Describe(ctx, name)
		if creates && sketch.KindOf(err) == sketch.NotFound {
			return 0, sketch.Errorf(sketch.Invalid, "the upload is a DataSketches KLL sketch, whose bytes do not say whether it keeps doubles or longs, and there is no sketch %s yet to say it: send ?items=long or ?items=double", strconv.Quote(name))
		}
		if err != nil {
			return 0, err
		}
		p, ok := info.Spec.Params.(sketch.KLLParams)
		if !ok {
			return 0, sketch.WrongKind(name, info.Spec.Type(), sketch.TypeKLL)
		}
		return p.Items, nil
	}
}

// seriesItems says what a KLL upload to a bucket of the series name keeps:
// what the series keeps. A series of another kind is a Conflict.
func seriesItems(ss SeriesStore, name string) kllItemsOf {
	return func(ctx context.Context) (kll.ItemType, error) {
		var t kll.ItemType
		err := ss.ViewSeries(ctx, name, func(spec *series.Spec) ([]series.Run, error) {
			p, ok := spec.Params.(sketch.KLLParams)
			if !ok {
				return nil, sketch.Errorf(sketch.Conflict, "series %s keeps %s sketches; a kll sketch cannot join them", strconv.Quote(name), spec.Params.Kind().Type)
			}
			t = p.Items
			return nil, nil
		}, func(*series.Spec, []series.Bucket) error { return nil })
		return t, err
	}
}

// uploadFormat is an upload's ?format=: the sketch type its bytes are
// in, "" (absent) to recognize it from the preamble. DecodeUpload refuses
// a name that is no type.
func uploadFormat(q map[string][]string) sketch.Type {
	f, _ := first(q, "format")
	return sketch.Type(f)
}

// handleRawPut creates or replaces a sketch from uploaded bytes.
func (s *Server) handleRawPut(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	q, err := query(r, "format", "items")
	if err != nil {
		return err
	}
	sk, err := s.upload(w, r, q, s.storedItems(name, true))
	if err != nil {
		return err
	}
	return s.commit(w, r, func(res idem.Result) (*answer, error) {
		if res.Created {
			return jsonAnswer(http.StatusCreated, describe(res.Info))
		}
		return jsonAnswer(http.StatusOK, describe(res.Info))
	}, func(ctx context.Context) (res idem.Result, err error) {
		res.Info, res.Created, err = s.store.Put(ctx, name, sk)
		return res, err
	})
}

// describeAnswer renders a write's answer: 200 and the new description.
func describeAnswer(res idem.Result) (*answer, error) {
	return jsonAnswer(http.StatusOK, describe(res.Info))
}

// handleRawPost unions uploaded bytes into a stored sketch, which keeps
// its parameters. An HLL upload with fewer registers than the stored
// sketch is a 409 unless ?fold=true: then the stored sketch is folded down
// to the upload's log2m first (lossy, so never implicit), and the answer
// says from which log2m.
func (s *Server) handleRawPost(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	q, err := query(r, "fold", "format", "items")
	if err != nil {
		return err
	}
	fold, err := boolParam(q, "fold", false)
	if err != nil {
		return err
	}
	sk, err := s.upload(w, r, q, s.storedItems(name, false))
	if err != nil {
		return err
	}
	up, isHLL := sketch.HLLOf(sk)
	if !fold {
		return s.commit(w, r, describeAnswer, func(ctx context.Context) (res idem.Result, err error) {
			res.Info, err = s.store.Merge(ctx, name, sk)
			if errors.Is(err, hll.ErrIncompatible) {
				e := err.(*sketch.Error)
				return res, sketch.Wrap(e.Kind, err, fmt.Sprintf("%s; POST with ?fold=true to fold the stored sketch down to log2m=%d (lossy: it keeps fewer registers)", e.Detail, up.Params().Log2m))
			}
			return res, err
		})
	}
	if !isHLL {
		return sketch.Errorf(sketch.Invalid, "fold=true applies to hll uploads; this is a %s sketch", sk.Kind().Type)
	}
	var from int
	foldMerge := func(cur sketch.Sketch) (sketch.Sketch, error) {
		h, ok := sketch.HLLOf(cur)
		if !ok {
			return nil, sketch.WrongKind(name, cur.Kind().Type, sketch.TypeHLL)
		}
		from = 0
		if p := h.Params(); up.Params().Log2m < p.Log2m {
			f, err := h.Fold(up.Params().Log2m, p.Regwidth)
			if err != nil {
				return nil, sketch.Wrap(sketch.Invalid, err, strings.TrimPrefix(err.Error(), "hll: "))
			}
			h, from = f, p.Log2m
		} else {
			h = h.Clone()
		}
		if err := h.Union(up); err != nil {
			return nil, sketch.Wrap(sketch.Conflict, err, "cannot union into "+strconv.Quote(name)+": "+strings.TrimPrefix(err.Error(), "hll: "))
		}
		return sketch.NewHLL(h), nil
	}
	// from is set by foldMerge, which the store runs before the answer is
	// rendered.
	return s.commit(w, r, func(res idem.Result) (*answer, error) {
		d := describe(res.Info)
		if hr, ok := d.(hllResponse); ok && from > 0 {
			hr.FoldedFromLog2m = from
			d = hr
		}
		return jsonAnswer(http.StatusOK, d)
	}, func(ctx context.Context) (res idem.Result, err error) {
		res.Info, err = s.store.Transform(ctx, name, name, foldMerge)
		return res, err
	})
}

// writeDescribe answers with the current description of name.
func (s *Server) writeDescribe(w http.ResponseWriter, r *http.Request, name string, status int) error {
	info, err := s.store.Describe(r.Context(), name)
	if err != nil {
		return err
	}
	return writeJSON(w, status, withExpiry(info, describe(info)))
}

// noneMatch reports whether an If-None-Match header (a list of entity
// tags, or "*") matches etag, comparing weakly as RFC 9110 §13.1.2 says:
// W/"x" matches "x".
func noneMatch(headers []string, etag string) bool {
	for _, h := range headers {
		for _, tag := range strings.Split(h, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
				return true
			}
		}
	}
	return false
}
