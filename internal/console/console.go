// Package console is sketchd's page for people: a small single-page app
// (HTML, JavaScript modules, CSS, an SVG icon) embedded in the binary and
// served at / and /console/{file}. It calls only the public JSON API, so
// everything it shows a client can get too; it keeps a read token for the
// tab only (sessionStorage) and sends it as a bearer token.
//
// Nothing is fetched from elsewhere at run time and nothing needs a
// JavaScript toolchain to build: the assets are plain files. Every answer
// carries a Content-Security-Policy that allows scripts, styles and
// connections from the page's own origin only (no inline scripts or
// styles), so the page itself cannot be made to run injected code.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// CSP is the Content-Security-Policy of every console answer: own-origin
// scripts, styles, images and API calls; blob: images and downloads (the
// sketch download is a blob of bytes fetched with the token); no inline
// code, no frames, no forms posting elsewhere.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// file is one asset, ready to serve.
type file struct {
	name  string
	ctype string
	body  []byte
	gzip  []byte
	etag  string
}

// Handler serves the console's files. Its zero value is not usable; make
// one with New.
type Handler struct {
	files map[string]*file
	index *file
}

// New loads the embedded assets, compresses them once and computes their
// ETags. It fails only if the embedded tree is broken, which a test rules
// out.
func New() (*Handler, error) {
	h := &Handler{files: map[string]*file{}}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "assets/")
		ctype := mime.TypeByExtension(path.Ext(name))
		if ctype == "" {
			return fmt.Errorf("console: no media type for %s", name)
		}
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		zw.Write(body)
		if err := zw.Close(); err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		h.files[name] = &file{name: name, ctype: ctype, body: body, gzip: z.Bytes(), etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("console: load assets: %w", err)
	}
	h.index = h.files["index.html"]
	if h.index == nil {
		return nil, fmt.Errorf("console: assets have no index.html")
	}
	return h, nil
}

// Names lists the served asset names (index.html and the files under
// /console/), for tests.
func (h *Handler) Names() []string {
	out := make([]string, 0, len(h.files))
	for n := range h.files {
		out = append(out, n)
	}
	return out
}

// Page serves index.html (the route GET /).
func (h *Handler) Page(w http.ResponseWriter, r *http.Request) { h.serve(w, r, h.index) }

// File serves the asset named name (the route GET /console/{file}); it
// reports false, writing nothing, when there is no such asset.
func (h *Handler) File(w http.ResponseWriter, r *http.Request, name string) bool {
	f := h.files[name]
	if f == nil || name == "index.html" {
		return false
	}
	h.serve(w, r, f)
	return true
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, f *file) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	// Revalidate every time: a new binary must never run an old script.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", f.etag)
	hd.Set("Vary", "Accept-Encoding")
	hd.Set("Content-Type", f.ctype)
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.body
	if acceptsGzip(r.Header.Values("Accept-Encoding")) {
		hd.Set("Content-Encoding", "gzip")
		body = f.gzip
	}
	hd.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// etagMatches reports whether an If-None-Match list names etag (weak
// comparison, RFC 9110 §13.1.2) or is "*".
func etagMatches(list, etag string) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether Accept-Encoding values allow gzip (a q=0
// entry refuses it).
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
				continue
			}
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
