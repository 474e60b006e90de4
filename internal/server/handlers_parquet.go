package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/sketchd/sketchd/internal/sketch"
)

// parquetRow is one row of a Parquet listing (GET
// /v1/sketches?format=parquet): a sketch's name, its type, its
// parameters as the JSON object a PUT /v1/sketches/{name} takes to create
// it, its estimate (the number /metrics exports for it: the distinct
// count for the kinds that count, a Count-Min's total, the values a KLL
// sketch holds, a Bloom filter's estimated items) and its bytes, exactly
// as GET /v1/sketches/{name}/raw answers them. Strings are UTF-8
// (Parquet's STRING), bytes a plain BINARY: Spark reads them as BINARY,
// pyarrow and pandas as bytes.
type parquetRow struct {
	Name       string  `parquet:"name"`
	Kind       string  `parquet:"kind,dict"`
	Parameters string  `parquet:"parameters"`
	Estimate   float64 `parquet:"estimate"`
	Bytes      []byte  `parquet:"bytes"`
}

// What a Parquet listing holds in memory at once: the rows of one row
// group, which is written out when it reaches parquetGroupRows rows or
// parquetGroupBytes of sketch bytes (a sketch larger than that is a row
// group of its own), as it is built from the sketches of one View.
const (
	parquetGroupRows  = 256
	parquetGroupBytes = 4 << 20
)

// parquetMediaType is the media type of a Parquet file (IANA,
// application/vnd.apache.parquet).
const parquetMediaType = "application/vnd.apache.parquet"

// writeParquetList answers a page of the listing infos as one Parquet
// file, the sketches read again a row group at a time so that each row's
// estimate and bytes are of one state. A sketch deleted after the listing
// read it is left out. An error before the first byte is answered as a
// problem; after it, the connection is cut so that the client sees a
// broken transfer and a file without its footer, never a short table
// that looks whole.
func (s *Server) writeParquetList(w http.ResponseWriter, r *http.Request, infos []sketch.Info, next string, skipped []string) error {
	h := w.Header()
	h.Set("Content-Type", parquetMediaType)
	h.Set("Content-Disposition", `attachment; filename="sketches.parquet"`)
	h.Set("Cache-Control", "no-store")
	if next != "" {
		h.Set("Sketchd-Next", next)
	}
	// created_by stays parquet-go's own: readers key their workarounds
	// of writers' bugs on the library that wrote the file.
	opts := []parquet.WriterOption{
		// Version 1 data pages: every engine reads them.
		parquet.DataPageVersion(1),
		// Bounds of sketch bytes say nothing and would copy them into
		// the page headers and the footer.
		parquet.SkipPageBounds("bytes"),
		parquet.SkipPageStatistics("bytes"),
		parquet.SkipPageBounds("parameters"),
		parquet.SkipPageStatistics("parameters"),
	}
	if next != "" {
		opts = append(opts, parquet.KeyValueMetadata("sketchd.next", next))
	}
	if len(skipped) > 0 {
		opts = append(opts, parquet.KeyValueMetadata("sketchd.unreadable", strings.Join(skipped, ", ")))
	}
	out := &startedWriter{w: w}
	pw := parquet.NewGenericWriter[parquetRow](out, opts...)
	fail := func(err error) error {
		if !out.started {
			// The problem answer is not a file.
			for _, k := range []string{"Content-Disposition", "Cache-Control", "Sketchd-Next"} {
				h.Del(k)
			}
			return err
		}
		if !errors.Is(err, errClientGone) && r.Context().Err() == nil {
			s.log.ErrorContext(r.Context(), "parquet listing cut short", "request_id", requestIDOf(r.Context()), "path", r.URL.Path, "err", err)
		}
		panic(http.ErrAbortHandler)
	}
	for len(infos) > 0 {
		n, size := 0, 0
		for n < len(infos) && n < parquetGroupRows && (n == 0 || size+infos[n].SizeBytes <= parquetGroupBytes) {
			size += infos[n].SizeBytes
			n++
		}
		if err := s.parquetGroup(r, pw, infos[:n]); err != nil {
			return fail(err)
		}
		if err := pw.Flush(); err != nil {
			return fail(err)
		}
		infos = infos[n:]
	}
	if err := pw.Close(); err != nil {
		return fail(err)
	}
	return nil
}

// parquetGroup writes the rows of infos' sketches, read in one View (one
// at a time if one of them was deleted meanwhile, leaving it out).
func (s *Server) parquetGroup(r *http.Request, pw *parquet.GenericWriter[parquetRow], infos []sketch.Info) error {
	names := make([]string, len(infos))
	for i, in := range infos {
		names[i] = in.Name
	}
	write := func(names []string, infos []sketch.Info) error {
		return s.store.View(r.Context(), names, func(sks []sketch.Sketch) error {
			for i, sk := range sks {
				row, err := parquetRowOf(infos[i], sk)
				if err != nil {
					return err
				}
				if _, err := pw.Write([]parquetRow{row}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	err := write(names, infos)
	if sketch.KindOf(err) != sketch.NotFound {
		return err
	}
	// Nothing was written: View reads every name before calling fn.
	for i := range names {
		if err := write(names[i:i+1], infos[i:i+1]); err != nil && sketch.KindOf(err) != sketch.NotFound {
			return err
		}
	}
	return nil
}

// parquetRowOf is the row of the sketch sk, listed as in: its kind,
// parameters and estimate are sk's (which may have been replaced since
// the listing), its bytes the raw download's.
func parquetRowOf(in sketch.Info, sk sketch.Sketch) (parquetRow, error) {
	b, err := sketch.AppendDownload(nil, sk, sketch.Download{})
	if err != nil {
		return parquetRow{}, err
	}
	info := sketch.Info{Name: in.Name, Spec: sketch.Spec{Params: sk.Params(), Metric: in.Spec.Metric}, CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt}
	sk.Describe(&info)
	params, err := parametersOf(info)
	if err != nil {
		return parquetRow{}, err
	}
	return parquetRow{Name: in.Name, Kind: string(sk.Kind().Type), Parameters: params, Estimate: finite(sk.Estimate()), Bytes: b}, nil
}

// parametersOf returns the members of in's description that are its
// kind's creation parameters (kindFields), as a JSON object: what a PUT
// /v1/sketches/{name} takes to create a sketch of the same parameters
// (with "type").
func parametersOf(in sketch.Info) (string, error) {
	typ := in.Spec.Type()
	fields, ok := kindFields[typ]
	if !ok {
		return "", fmt.Errorf("server: no parameter fields for sketch type %q", typ)
	}
	b, err := json.Marshal(describe(in))
	if err != nil {
		return "", err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return "", err
	}
	params := map[string]json.RawMessage{}
	for _, f := range strings.Fields(fields) {
		if v, ok := all[f]; ok {
			params[f] = v
		}
	}
	// A kind created from one of two equivalent pairs keeps the pair
	// that creates it: a Count-Min its width and depth (its epsilon and
	// delta follow from them), a Bloom filter its expected_items and fpp
	// if it was created so (else its bits and hashes).
	switch typ {
	case sketch.TypeCMS:
		delete(params, "epsilon")
		delete(params, "delta")
	case sketch.TypeBloom:
		if _, ok := params["expected_items"]; ok {
			delete(params, "bits")
			delete(params, "hashes")
		}
	}
	b, err = json.Marshal(params)
	return string(b), err
}

// startedWriter is the response body of a streamed answer: it sends the
// headers (header, or a 200) before the first byte and records whether
// anything was written, after which an error can no longer be answered
// as a problem.
type startedWriter struct {
	w       http.ResponseWriter
	header  func()
	started bool
}

func (sw *startedWriter) Write(p []byte) (int, error) {
	if len(p) > 0 && !sw.started {
		sw.started = true
		if sw.header != nil {
			sw.header()
		} else {
			sw.w.WriteHeader(http.StatusOK)
		}
	}
	n, err := sw.w.Write(p)
	if err != nil {
		err = errors.Join(errClientGone, err)
	}
	return n, err
}

// errClientGone marks a failed write of a streamed answer.
var errClientGone = errors.New("server: writing the answer")
