package client

import (
	"context"
	"encoding/binary"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Adding ids. The client cannot know whether a name holds an HLL or a
// Count-Min sketch, so the method says which is meant:
//
//   - AddInts, AddStrings, AddIDs and AddHashes are HLL adds (the server
//     also takes ids for a Count-Min sketch, counting each once).
//   - AddItems is the Count-Min add, with a count per id.
//
// Every add is retried: it carries an Idempotency-Key, so a retry after a
// lost answer is answered from the first attempt and counts nothing
// twice. With WithoutIdempotencyKeys, HLL adds are still retried (a
// register keeps its maximum: adding the same ids twice leaves the same
// sketch), but AddItems, and ids sent to a Count-Min sketch, are not:
// without a key a retry would count them again (WithUnsafeRetry opts in).
//
// Every add answers only once the write is durable, with the number of
// ids (or items) accepted. A body over the server's limits is IsTooLarge;
// send smaller batches (a Batcher does).

// AddInts adds integer ids to an HLL sketch, sent as big-endian int64s
// (application/octet-stream, the fastest body).
func (c *Client) AddInts(ctx context.Context, name string, ids []int64, opts ...CallOption) (int, error) {
	return c.addBody(ctx, name, "application/octet-stream", intsBody(ids), true, opts)
}

func intsBody(ids []int64) []byte {
	body := make([]byte, 0, 8*len(ids))
	for _, id := range ids {
		body = binary.BigEndian.AppendUint64(body, uint64(id))
	}
	return body
}

// AddStrings adds text ids to an HLL sketch. Each must be valid UTF-8.
func (c *Client) AddStrings(ctx context.Context, name string, ids []string, opts ...CallOption) (int, error) {
	body, err := stringsBody(ids)
	if err != nil {
		return 0, err
	}
	return c.addBody(ctx, name, "application/json", body, true, opts)
}

func stringsBody(ids []string) ([]byte, error) {
	body := make([]byte, 0, 16+len(ids)*24)
	body = append(body, `{"ids":[`...)
	for i, s := range ids {
		if i > 0 {
			body = append(body, ',')
		}
		var err error
		if body, err = appendJSONString(body, s); err != nil {
			return nil, err
		}
	}
	return append(body, "]}"...), nil
}

// AddIDs adds integer and text ids, mixed, to an HLL sketch.
func (c *Client) AddIDs(ctx context.Context, name string, ids []ID, opts ...CallOption) (int, error) {
	body, err := idsBody(ids)
	if err != nil {
		return 0, err
	}
	return c.addBody(ctx, name, "application/json", body, true, opts)
}

func idsBody(ids []ID) ([]byte, error) {
	body := make([]byte, 0, 16+len(ids)*24)
	body = append(body, `{"ids":[`...)
	for i, id := range ids {
		if i > 0 {
			body = append(body, ',')
		}
		var err error
		if body, err = appendID(body, id); err != nil {
			return nil, err
		}
	}
	return append(body, "]}"...), nil
}

// AddHashes adds already hashed values to an HLL sketch as they are (like
// PostgreSQL's hll_add(h, hll_hashval(v))).
func (c *Client) AddHashes(ctx context.Context, name string, hashes []int64, opts ...CallOption) (int, error) {
	return c.addBody(ctx, name, "application/json", hashesBody(hashes), true, opts)
}

func hashesBody(hashes []int64) []byte {
	body := make([]byte, 0, 16+len(hashes)*21)
	body = append(body, `{"hashes":[`...)
	for i, h := range hashes {
		if i > 0 {
			body = append(body, ',')
		}
		body = strconv.AppendInt(body, h, 10)
	}
	return append(body, "]}"...)
}

// Item is an id with a count, for a Count-Min sketch.
type Item struct {
	ID    ID    `json:"id"`
	Count int64 `json:"count"` // at least 1
}

// AddItems adds counted ids to a Count-Min sketch. It is retried with its
// Idempotency-Key; without keys, only when opts has WithUnsafeRetry or the
// connection could not be opened at all (see above).
func (c *Client) AddItems(ctx context.Context, name string, items []Item, opts ...CallOption) (int, error) {
	body, err := itemsBody(items)
	if err != nil {
		return 0, err
	}
	return c.addBody(ctx, name, "application/json", body, false, opts)
}

func itemsBody(items []Item) ([]byte, error) {
	body := make([]byte, 0, 16+len(items)*40)
	body = append(body, `{"items":[`...)
	for i, it := range items {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, `{"id":`...)
		var err error
		if body, err = appendID(body, it.ID); err != nil {
			return nil, err
		}
		body = append(body, `,"count":`...)
		body = strconv.AppendInt(body, it.Count, 10)
		body = append(body, '}')
	}
	return append(body, "]}"...), nil
}

// addBody posts an add body; idempotent says whether it may be retried.
func (c *Client) addBody(ctx context.Context, name, contentType string, body []byte, idempotent bool, opts []CallOption) (int, error) {
	cc := callOptions(opts)
	var q url.Values
	if cc.create {
		q = url.Values{"create": {"true"}}
	}
	r, err := c.do(ctx, call{
		method: http.MethodPost, path: sketchPath(name, "add"), query: q, body: body, contentType: contentType,
		idempotent: idempotent || cc.retryUnsafe, write: true, ok: []int{http.StatusOK},
	})
	if err != nil {
		return 0, err
	}
	var a struct {
		Accepted int `json:"accepted"`
	}
	return a.Accepted, decode(r, &a)
}

// Event adds one id to several sketches and series (at least one, 100
// at most together), the series at TS (the zero time is the server's
// now).
type Event struct {
	ID       ID        `json:"id"`
	Sketches []string  `json:"sketches,omitempty"`
	Series   []string  `json:"series,omitempty"`
	TS       time.Time `json:"ts,omitzero"`
}

// AddEvents adds each event's id to each of its sketches and series, all
// or nothing (POST /v1/events), and returns the number of events
// accepted. It is retried with its Idempotency-Key; without keys it is
// not (they may be Count-Min sketches or series) unless opts has
// WithUnsafeRetry. WithCreate creates missing sketches (not series) as
// HLLs.
func (c *Client) AddEvents(ctx context.Context, events []Event, opts ...CallOption) (int, error) {
	cc := callOptions(opts)
	cl, err := jsonCall(http.MethodPost, "/v1/events", struct {
		Events []Event `json:"events"`
	}{events}, cc.retryUnsafe, http.StatusOK)
	if err != nil {
		return 0, err
	}
	if cc.create {
		cl.query = url.Values{"create": {"true"}}
	}
	cl.write = true
	r, err := c.do(ctx, cl)
	if err != nil {
		return 0, err
	}
	var a struct {
		Accepted int `json:"accepted"`
	}
	return a.Accepted, decode(r, &a)
}
