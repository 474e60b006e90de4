package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sketchd/sketchd/internal/bloom"
	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/ingest"
	"github.com/sketchd/sketchd/internal/poison"
	"github.com/sketchd/sketchd/internal/sketch"
)

// nameParam returns the {name} path parameter, unescaped and validated.
// A client that escapes more than it must (encodeURIComponent turns a ':'
// into %3A) names the same sketch: the router matches the escaped path
// then, and the parameter holds the escapes. An escape that does not
// decode is left for validation to refuse.
func nameParam(r *http.Request) (string, error) {
	name := chi.URLParam(r, "name")
	if strings.Contains(name, "%") {
		if u, err := url.PathUnescape(name); err == nil {
			name = u
		}
	}
	if err := sketch.ValidateName(name); err != nil {
		return "", err
	}
	return name, nil
}

// handleList lists a page of sketches: as JSON, or with ?format=parquet
// as one Parquet file, a row a sketch (writeParquetList). Both skip the
// records that cannot be decoded and name them in Sketchd-Unreadable.
func (s *Server) handleList(w http.ResponseWriter, r *http.Request) error {
	q, prefix, after, limit, err := listParams(r, "format")
	if err != nil {
		return err
	}
	format, _ := first(q, "format")
	if format != "" && format != "json" && format != "parquet" {
		return sketch.Errorf(sketch.Invalid, "query parameter format=%q must be json (the default) or parquet", clip(format))
	}
	// A token limited to prefixes lists only what it may see.
	infos, more, skipped, err := listWithin(r.Context(), prefix, after, limit, func(prefix, after string, limit int) ([]sketch.Info, bool, []string, error) {
		if sl, ok := s.store.(skippingLister); ok {
			return sl.ListSkipping(r.Context(), prefix, after, limit)
		}
		infos, more, err := s.store.List(r.Context(), prefix, after, limit)
		return infos, more, nil, err
	})
	if err != nil {
		return err
	}
	if len(skipped) > 0 {
		w.Header().Set("Sketchd-Unreadable", strings.Join(skipped, ", "))
	}
	next := ""
	if more {
		next = infos[len(infos)-1].Name
	}
	if format == "parquet" {
		return s.writeParquetList(w, r, infos, next, skipped)
	}
	resp := listResponse{Sketches: make([]any, len(infos)), Next: next}
	for i, in := range infos {
		resp.Sketches[i] = withExpiry(in, describe(in))
	}
	return writeJSON(w, http.StatusOK, resp)
}

// listParams reads ?prefix=, ?after= and ?limit= of a list route, which
// may take the query parameters extra too (q holds them all).
func listParams(r *http.Request, extra ...string) (q map[string][]string, prefix, after string, limit int, err error) {
	q, err = query(r, append([]string{"prefix", "after", "limit"}, extra...)...)
	if err != nil {
		return nil, "", "", 0, err
	}
	prefix, _ = first(q, "prefix")
	after, _ = first(q, "after")
	for k, v := range map[string]string{"prefix": prefix, "after": after} {
		if v != "" && sketch.ValidateName(v) != nil {
			return nil, "", "", 0, sketch.Errorf(sketch.Invalid, "query parameter %s=%q is not a name (or its start)", k, clip(v))
		}
	}
	limit, err = intParam(q, "limit", 100, 1, 1000)
	return q, prefix, after, limit, err
}

// skippingLister is a Store whose listing reports the records it skipped
// because they could not be decoded, by quoted name.
type skippingLister interface {
	ListSkipping(ctx context.Context, prefix, after string, limit int) ([]sketch.Info, bool, []string, error)
}

// handleCreate creates a sketch (201), accepts the same parameters again
// (200, updating the metric flag if it differs) and refuses others (409).
func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	if _, err := query(r); err != nil {
		return err
	}
	var req createRequest
	if err := s.decodeJSON(w, r, &req, true); err != nil {
		return err
	}
	spec, err := req.spec()
	if err != nil {
		return err
	}
	if spec.Metric {
		// Each such sketch is a /metrics series: the operator decides.
		if err := requireAdmin(r.Context(), `"metric": true`); err != nil {
			return err
		}
	}
	if !spec.Expiry.IsZero() {
		if _, err := s.expiryStore(); err != nil {
			return err
		}
	}
	return s.commit(w, r, func(res idem.Result) (*answer, error) {
		if !res.Created {
			return jsonAnswer(http.StatusOK, withExpiry(res.Info, describe(res.Info)))
		}
		a, err := jsonAnswer(http.StatusCreated, withExpiry(res.Info, describe(res.Info)))
		if a != nil {
			a.location = "/v1/sketches/" + name
		}
		return a, err
	}, func(ctx context.Context) (res idem.Result, err error) {
		res.Info, res.Created, err = s.store.Create(ctx, name, spec)
		return res, err
	})
}

func (s *Server) handleDescribe(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	q, err := query(r, "estimator")
	if err != nil {
		return err
	}
	est, err := estimatorQuery(q)
	if err != nil {
		return err
	}
	if est == hll.PostgreSQLEstimator {
		return s.writeDescribe(w, r, name, http.StatusOK)
	}
	// Another estimator reads the registers.
	var a hll.Answer
	err = s.store.View(r.Context(), []string{name}, func(sks []sketch.Sketch) error {
		if err := needsHLL("estimator", est, sks[0]); err != nil {
			return err
		}
		h, _ := sketch.HLLOf(sks[0])
		a = h.Answer(est)
		return nil
	})
	if err != nil {
		return err
	}
	info, err := s.store.Describe(r.Context(), name)
	if err != nil {
		return err
	}
	d, ok := describe(info).(hllResponse)
	if !ok { // replaced by a sketch of another kind meanwhile
		return sketch.Errorf(sketch.Conflict, "sketch %q changed kind while it was read; ask again", name)
	}
	d.Cardinality, d.StdError, d.LowerBound, d.UpperBound = finite(a.Estimate), finite(a.StdError), finite(a.LowerBound), finite(a.UpperBound)
	d.Estimator = est.String()
	return writeJSON(w, http.StatusOK, withExpiry(info, d))
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	if _, err := query(r); err != nil {
		return err
	}
	if err := s.takeWriteSlot(r.Context()); err != nil {
		return err
	}
	return s.commit(w, r, noContent, func(ctx context.Context) (idem.Result, error) {
		return idem.Result{}, s.store.Delete(ctx, name)
	})
}

// noContent renders the answer of a delete.
func noContent(idem.Result) (*answer, error) { return &answer{status: http.StatusNoContent}, nil }

// bodyFormat is how an id body is encoded.
type bodyFormat int

const (
	formatJSON bodyFormat = iota
	formatLines
	formatOctet
)

// idFormat reads the media type and ?id_type of an id body.
func (s *Server) idFormat(r *http.Request, q map[string][]string) (bodyFormat, ingest.LineFormat, error) {
	mt, err := mediaType(r)
	if err != nil {
		s.refused(refusedMediaType)
		return 0, 0, err
	}
	idType, hasType := first(q, "id_type")
	if hasType && idType != "int" && idType != "text" {
		return 0, 0, sketch.Errorf(sketch.Invalid, "query parameter id_type=%q must be int or text", clip(idType))
	}
	switch mt {
	case "application/json":
		if hasType {
			return 0, 0, sketch.Errorf(sketch.Invalid, "id_type applies to text/plain and application/x-ndjson bodies; JSON says its own types")
		}
		return formatJSON, 0, nil
	case "application/x-ndjson":
		switch idType {
		case "int":
			return formatLines, ingest.NDJSONInts, nil
		case "text":
			return formatLines, ingest.NDJSONTexts, nil
		}
		return formatLines, ingest.NDJSON, nil
	case "text/plain":
		if idType == "text" {
			return formatLines, ingest.TextTexts, nil
		}
		return formatLines, ingest.TextInts, nil
	case "application/octet-stream":
		if idType == "text" {
			return 0, 0, sketch.Errorf(sketch.Invalid, "octet-stream bodies carry big-endian int64 ids; id_type=text does not apply")
		}
		return formatOctet, 0, nil
	}
	s.refused(refusedMediaType)
	return 0, 0, errUnsupportedMedia(fmt.Sprintf("Content-Type %q is not an id body; send application/json, application/x-ndjson, text/plain or application/octet-stream", clip(r.Header.Get("Content-Type"))))
}

// ingestError classifies a parser's refusal.
func (s *Server) ingestError(err error) error {
	var ie *ingest.Error
	if !errors.As(err, &ie) {
		s.refused(refusedBadInput)
		return sketch.Wrap(sketch.Invalid, err, "the body could not be parsed")
	}
	if errors.Is(err, ingest.ErrTooMany) {
		s.refused(refusedTooLarge)
		return sketch.Wrap(sketch.TooLarge, err, ie.Detail()+fmt.Sprintf(" (at most %d per request)", s.cfg.MaxIDs))
	}
	s.refused(refusedBadInput)
	return sketch.Wrap(sketch.Invalid, err, ie.Detail())
}

// handleAdd adds ids to a sketch: hashed straight into an HLL, counted
// into a CMS, as the store finds the sketch's kind. 200 only once the
// write is durable.
func (s *Server) handleAdd(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	q, err := query(r, "create", "id_type", "report", "byte_order")
	if err != nil {
		return err
	}
	create, err := boolParam(q, "create", false)
	if err != nil {
		return err
	}
	fresh := false
	if report, ok := first(q, "report"); ok {
		if report != "new" {
			return sketch.Errorf(sketch.Invalid, "query parameter report=%q: the only report is new", clip(report))
		}
		fresh = true
	}
	return s.addBodyAs(w, r, q, fresh, func(ctx context.Context, in sketch.Input) (sketch.Added, error) {
		added, err := s.store.Add(ctx, name, in, create)
		if err != nil && !create {
			err = withCreateHint(err, name)
		}
		if err != nil && fresh {
			err = sketch.Prefixed(err, fmt.Sprintf("sketch %q: ", name))
		}
		return added, err
	})
}

// withCreateHint tells, in the 404 of an add to a missing sketch, the two
// ways to make one: a create, or the add again with ?create=true.
func withCreateHint(err error, name string) error {
	var e *sketch.Error
	if !errors.As(err, &e) || e.Kind != sketch.NotFound {
		return err
	}
	return &sketch.Error{Kind: e.Kind, Err: e.Err,
		Detail: e.Detail + fmt.Sprintf("; create it with PUT /v1/sketches/%s, or add with ?create=true to create it with the defaults of the kind the body implies", name)}
}

// handleCheck answers, for each id of a body in any id format, whether a
// Bloom filter may hold it.
func (s *Server) handleCheck(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	q, err := query(r, "id_type")
	if err != nil {
		return err
	}
	in, done, err := s.idBody(w, r, q)
	if err != nil {
		return err
	}
	defer done()
	return answerOne(s, w, r, name, func(sk sketch.Sketch) (checkResponse, error) {
		f, ok := sketch.BloomOf(sk)
		if !ok {
			return checkResponse{}, sketch.WrongKind(name, sk.Kind().Type, sketch.TypeBloom)
		}
		return check(f, in)
	})
}

// idBody reads an id body in any format (?id_type and ?byte_order in q,
// where the route takes them); done releases it.
func (s *Server) idBody(w http.ResponseWriter, r *http.Request, q map[string][]string) (*bodyInput, func(), error) {
	format, lines, err := s.idFormat(r, q)
	if err != nil {
		return nil, nil, err
	}
	little, err := byteOrder(q, format)
	if err != nil {
		return nil, nil, err
	}
	body, err := s.readBody(w, r, s.cfg.MaxBody)
	if err != nil {
		return nil, nil, err
	}
	in := &bodyInput{s: s, body: body.Bytes(), format: format, lines: lines, little: little}
	return in, func() { in.release(); s.putBody(body) }, nil
}

// check looks up every id of in in f.
func check(f *bloom.Filter, in *bodyInput) (checkResponse, error) {
	hs, err := in.Hashes()
	if err != nil {
		return checkResponse{}, err
	}
	ids, err := in.echo()
	if err != nil {
		return checkResponse{}, err
	}
	resp := checkResponse{FalsePositiveRate: finite(f.Rate()), Results: make([]checkResult, len(hs))}
	for i, h := range hs {
		p := f.Contains(h)
		resp.Results[i] = checkResult{ID: ids[i], Present: p}
		if p {
			resp.Present++
		}
	}
	return resp, nil
}

// addBodyAs reads an id body in any format (?id_type in q) and answers
// what add, the store's write, applied, counting it in the metrics; with
// fresh (add?report=new) the input asks which ids were new, and the
// answer lists them (freshResponse).
func (s *Server) addBodyAs(w http.ResponseWriter, r *http.Request, q map[string][]string, fresh bool, add func(context.Context, sketch.Input) (sketch.Added, error)) error {
	return s.addBodyAnswer(w, r, q, fresh, func(ctx context.Context, in sketch.Input) (idem.Result, error) {
		a, err := add(ctx, in)
		return idem.Result{Added: a}, err
	}, nil)
}

// addBodyAnswer is addBodyAs whose write gives the whole result; answerOf,
// when set, renders the answer from it (also under an idempotency key,
// where the store renders it before it commits).
func (s *Server) addBodyAnswer(w http.ResponseWriter, r *http.Request, q map[string][]string, fresh bool, add func(context.Context, sketch.Input) (idem.Result, error), answerOf func(idem.Result) any) error {
	in, done, err := s.idBody(w, r, q)
	if err != nil {
		return err
	}
	defer done()
	in.fresh = fresh
	return s.commit(w, r, func(res idem.Result) (*answer, error) {
		if answerOf != nil {
			return jsonAnswer(http.StatusOK, answerOf(res))
		}
		if !fresh {
			return jsonAnswer(http.StatusOK, addResponse{Accepted: res.Added.Accepted})
		}
		resp, err := freshReport(in, res.Added)
		if err != nil {
			return nil, err
		}
		return jsonAnswer(http.StatusOK, resp)
	}, func(ctx context.Context) (idem.Result, error) {
		res, err := add(ctx, in)
		if err == nil {
			s.metrics.Ingested(string(res.Added.Type), res.Added.Accepted)
		}
		return res, err
	})
}

// freshReport lists the ids of in that added says were new, as sent.
func freshReport(in *bodyInput, added sketch.Added) (freshResponse, error) {
	ids, err := in.echo()
	if err != nil {
		return freshResponse{}, err
	}
	resp := freshResponse{Accepted: added.Accepted, New: []any{}}
	for i, f := range added.Fresh {
		if f && i < len(ids) {
			resp.New = append(resp.New, ids[i])
		}
	}
	resp.NewCount = len(resp.New)
	return resp, nil
}

// bodyInput is an id body parsed on demand in the form the sketch's kind
// takes (sketch.Input). Hashes reuse a pooled buffer, released with the
// request.
type bodyInput struct {
	s      *Server
	body   []byte
	format bodyFormat
	lines  ingest.LineFormat
	hp     *[]uint64
	// fresh asks which ids were new (add?report=new).
	fresh bool
	// little reads an octet-stream body of values (kll) little-endian.
	little bool
}

// byteOrder reads ?byte_order= (big, the default, or little), which only
// an octet-stream body of values takes.
func byteOrder(q map[string][]string, format bodyFormat) (little bool, err error) {
	v, ok := first(q, "byte_order")
	if !ok {
		return false, nil
	}
	if v != "big" && v != "little" {
		return false, sketch.Errorf(sketch.Invalid, "query parameter byte_order=%q must be big or little", clip(v))
	}
	if format != formatOctet {
		return false, sketch.Errorf(sketch.Invalid, "byte_order applies to application/octet-stream bodies")
	}
	return v == "little", nil
}

// Floats implements sketch.ValueInput: the body as doubles.
func (in *bodyInput) Floats() ([]float64, error) {
	var vs []float64
	var err error
	switch in.format {
	case formatJSON:
		vs, err = ingest.AppendJSONFloats(nil, in.body, in.s.cfg.MaxIDs)
	case formatLines:
		vs, err = ingest.AppendLineFloats(nil, in.body, in.lines <= ingest.NDJSONTexts, in.s.cfg.MaxIDs)
	default:
		vs, err = ingest.AppendOctetFloats(nil, in.body, in.little, in.s.cfg.MaxIDs)
	}
	if err != nil {
		return nil, in.s.ingestError(err)
	}
	return vs, nil
}

// Longs implements sketch.ValueInput: the body as int64s.
func (in *bodyInput) Longs() ([]int64, error) {
	var vs []int64
	var err error
	switch in.format {
	case formatJSON:
		vs, err = ingest.AppendJSONLongs(nil, in.body, in.s.cfg.MaxIDs)
	case formatLines:
		vs, err = ingest.AppendLineLongs(nil, in.body, in.lines <= ingest.NDJSONTexts, in.s.cfg.MaxIDs)
	default:
		vs, err = ingest.AppendOctetLongs(nil, in.body, in.little, in.s.cfg.MaxIDs)
	}
	if err != nil {
		return nil, in.s.ingestError(err)
	}
	return vs, nil
}

// WantsFresh implements sketch.FreshInput.
func (in *bodyInput) WantsFresh() bool { return in.fresh }

// echo returns the body's ids as the client gave them, in order: ints and
// texts, or the values of a body of hashes.
func (in *bodyInput) echo() ([]any, error) {
	if in.format == formatJSON && ingest.FirstKey(in.body) == "hashes" {
		hs, err := in.Hashes()
		if err != nil {
			return nil, err
		}
		out := make([]any, len(hs))
		for i, h := range hs {
			out[i] = int64(h)
		}
		return out, nil
	}
	items, err := in.s.parseItems(in.body, in.format, in.lines)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = idValue(cmsID(it.ID))
	}
	return out, nil
}

func (in *bodyInput) Hashes() ([]uint64, error) {
	if in.hp == nil {
		in.hp = in.s.hashBufs.Get().(*[]uint64)
	}
	hashes := (*in.hp)[:0]
	var err error
	switch in.format {
	case formatJSON:
		hashes, err = ingest.AppendJSONHashes(hashes, in.body, in.s.cfg.MaxIDs)
	case formatLines:
		hashes, err = ingest.AppendLineHashes(hashes, in.body, in.lines, in.s.cfg.MaxIDs)
	default:
		hashes, err = ingest.AppendOctetHashes(hashes, in.body, in.s.cfg.MaxIDs)
	}
	*in.hp = hashes
	if err != nil {
		return nil, in.s.ingestError(err)
	}
	return hashes, nil
}

func (in *bodyInput) Items() ([]cms.Item, error) {
	items, err := in.s.parseItems(in.body, in.format, in.lines)
	if err != nil {
		return nil, err
	}
	batch := make([]cms.Item, len(items))
	for i, it := range items {
		batch[i] = cms.Item{ID: cmsID(it.ID), Count: uint64(it.Count)}
	}
	return batch, nil
}

// Type makes a body of counted items create a Count-Min: its first JSON
// key is "items"; one of "values" a KLL sketch of doubles; an add asking
// which ids were new creates a Bloom filter.
func (in *bodyInput) Type() sketch.Type {
	if in.fresh {
		return sketch.TypeBloom
	}
	if in.format == formatJSON {
		switch ingest.FirstKey(in.body) {
		case "values":
			return sketch.TypeKLL
		case "items":
			return sketch.TypeCMS
		}
	}
	return sketch.TypeHLL
}

func (s *Server) parseItems(body []byte, format bodyFormat, lines ingest.LineFormat) ([]ingest.Item, error) {
	var items []ingest.Item
	var err error
	switch format {
	case formatJSON:
		items, err = ingest.AppendJSONItems(nil, body, s.cfg.MaxIDs)
	case formatLines:
		items, err = ingest.AppendLineItems(nil, body, lines, s.cfg.MaxIDs)
	default:
		items, err = ingest.AppendOctetItems(nil, body, s.cfg.MaxIDs)
	}
	if err != nil {
		return nil, s.ingestError(err)
	}
	return items, nil
}

func (in *bodyInput) release() {
	if in.hp != nil && cap(*in.hp) <= 1<<20 {
		poison.ReleaseUint64(*in.hp)
		in.s.hashBufs.Put(in.hp)
	}
}

// handleEvents adds each event's id to all its sketches in one
// all-or-nothing write.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "create")
	if err != nil {
		return err
	}
	create, err := boolParam(q, "create", false)
	if err != nil {
		return err
	}
	mt, err := mediaType(r)
	if err != nil {
		s.refused(refusedMediaType)
		return err
	}
	if mt != "application/json" {
		s.refused(refusedMediaType)
		return errUnsupportedMedia(fmt.Sprintf("send Content-Type: application/json (got %q)", clip(r.Header.Get("Content-Type"))))
	}
	body, err := s.readBody(w, r, s.cfg.MaxBody)
	if err != nil {
		return err
	}
	defer s.putBody(body)
	events, err := s.parseEvents(r.Context(), body.Bytes())
	if err != nil {
		return err
	}
	// The events own their bytes: let the collector have the body while
	// the store works (its memory stays reserved until the request ends).
	body.drop()
	anySeries := false
	for i := range events {
		if len(events[i].SeriesNames()) > 0 {
			anySeries = true
			break
		}
	}
	if anySeries {
		if _, err := s.seriesStore(); err != nil {
			return err
		}
	}
	return s.commit(w, r, func(idem.Result) (*answer, error) {
		return jsonAnswer(http.StatusOK, eventsResponse{Accepted: len(events)})
	}, func(ctx context.Context) (idem.Result, error) {
		counts, err := s.store.AddEvents(ctx, events, create)
		// sketchd_ingested_total counts each id once per sketch it went
		// to, under that sketch's kind, as the add route counts ids and
		// items.
		for typ, n := range counts {
			s.metrics.Ingested(string(typ), n)
		}
		return idem.Result{Counts: counts}, err
	})
}

const maxEventSketches = 100

// parseEvents parses and checks an events body. Memory is a small multiple
// of the body: the events slice grows once to the count the body's first
// part predicts (not by doubling), ids' texts and names are copied once,
// and a list of names repeated from the previous event is shared (and
// checked once).
func (s *Server) parseEvents(ctx context.Context, body []byte) ([]sketch.Event, error) {
	var events []sketch.Event
	var sketchesOK, seriesOK []string // the last lists found valid
	var unstamped *sketch.EventSeries // seriesOK without a stamp, shared
	err := ingest.ParseJSONEvents(body, s.cfg.MaxIDs, func(ev ingest.Event) error {
		i := len(events)
		if len(ev.Sketches)+len(ev.Series) == 0 {
			return sketch.Errorf(sketch.Invalid, "events[%d] names no sketches or series", i)
		}
		if len(ev.Sketches)+len(ev.Series) > maxEventSketches {
			return sketch.Errorf(sketch.Invalid, "events[%d] names %d sketches and series; at most %d", i, len(ev.Sketches)+len(ev.Series), maxEventSketches)
		}
		if !sameList(ev.Sketches, sketchesOK) {
			if err := s.checkEventNames(ctx, i, "sketches", ev.Sketches); err != nil {
				return err
			}
			sketchesOK = ev.Sketches
		}
		if !sameList(ev.Series, seriesOK) {
			if err := s.checkEventNames(ctx, i, "series", ev.Series); err != nil {
				return err
			}
			seriesOK = ev.Series
		}
		e := sketch.Event{ID: cmsID(ev.ID), Sketches: ev.Sketches}
		switch {
		case ev.TS != nil:
			if len(ev.Series) == 0 {
				return sketch.Errorf(sketch.Invalid, "events[%d].ts stamps series adds; this event names no series", i)
			}
			ts, err := time.Parse(time.RFC3339Nano, string(ev.TS))
			if err != nil {
				return sketch.Errorf(sketch.Invalid, "events[%d].ts=%q is not an RFC 3339 time", i, clip(string(ev.TS)))
			}
			e.Series = &sketch.EventSeries{Names: ev.Series, TS: ts}
		case len(ev.Series) > 0:
			if unstamped == nil || !sameList(unstamped.Names, ev.Series) {
				unstamped = &sketch.EventSeries{Names: ev.Series}
			}
			e.Series = unstamped
		}
		if len(events) == cap(events) {
			// Predict the count from the bytes read so far, with a
			// margin, rather than doubling: the slice is the largest
			// allocation here.
			// The first 64 events set the pace.
			n := len(events) + 1
			want := 64
			if n > 64 {
				want = max(n+n/8, int(int64(n)*int64(len(body))/int64(ev.End)*17/16))
			}
			want = min(s.cfg.MaxIDs, want)
			events = slices.Grow(events, want-len(events))
		}
		events = append(events, e)
		return nil
	})
	var se *sketch.Error
	switch {
	case err == nil:
		return events, nil
	case errors.As(err, &se):
		s.refused(refusedBadInput)
		return nil, err
	}
	return nil, s.ingestError(err)
}

// sameList reports whether a and b are the same shared list (the events
// parser hands out one slice for a list repeated from the previous event).
func sameList(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// checkEventNames checks the names of the i-th event's sketches or
// series, and that the request's token may use each: an events body
// naming one outside its prefixes is refused whole, before anything is
// written.
func (s *Server) checkEventNames(ctx context.Context, i int, field string, list []string) error {
	t := tenantOf(ctx)
	for j, n := range list {
		if err := sketch.ValidateName(n); err != nil {
			return sketch.Wrap(sketch.Invalid, err, fmt.Sprintf("events[%d].%s[%d]: %s", i, field, j, err.(*sketch.Error).Detail))
		}
		// allowNames, with the field formatted only for a refusal: a
		// body of new sketches has as many lists as events.
		if !t.allows(n) {
			s.metrics.AuthFailed("forbidden")
			return t.outside(fmt.Sprintf("events[%d].%s[%d]", i, field, j), n)
		}
		// A name twice would count the id twice in a CMS.
		if slices.Contains(list[:j], n) {
			return sketch.Errorf(sketch.Invalid, "events[%d] names %s %q twice", i, field, n)
		}
	}
	return nil
}

// parseRawIDs parses n raw JSON ids (from an encoding/json decode) with the
// ingest parser's strict rules: ints within int64, valid strings, nothing
// else. path formats the position of id i for messages.
func parseRawIDs(n int, raw func(i int) []byte, path string) ([]cms.ID, error) {
	buf := make([]byte, 0, 16*n+16)
	buf = append(buf, `{"ids":[`...)
	for i := range n {
		if len(raw(i)) == 0 {
			return nil, sketch.Errorf(sketch.Invalid, path+" is missing", i)
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, raw(i)...)
	}
	buf = append(buf, "]}"...)
	items, err := ingest.AppendJSONItems(nil, buf, -1)
	if err != nil {
		var ie *ingest.Error
		var i int
		if errors.As(err, &ie) {
			if _, serr := fmt.Sscanf(ie.Path, "ids[%d]", &i); serr == nil {
				return nil, sketch.Wrap(sketch.Invalid, err, fmt.Sprintf(path+": %s", i, ie.Reason))
			}
			return nil, sketch.Wrap(sketch.Invalid, err, ie.Reason)
		}
		return nil, sketch.Wrap(sketch.Invalid, err, "bad id")
	}
	ids := make([]cms.ID, len(items))
	for i, it := range items {
		ids[i] = cmsID(it.ID)
	}
	return ids, nil
}
