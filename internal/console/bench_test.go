package console

import (
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkServeScript serves app.js to a gzip-accepting client: the
// console's handler (compressed once at start) beside the standard
// library's file server over the same embedded files, compressing each
// answer as a generic gzip middleware would.
func BenchmarkServeScript(b *testing.B) {
	h, err := New()
	if err != nil {
		b.Fatal(err)
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		b.Fatal(err)
	}
	fileServer := http.FileServerFS(sub)
	run := func(b *testing.B, serve func(w http.ResponseWriter, r *http.Request)) {
		r := httptest.NewRequest(http.MethodGet, "/app.js", nil)
		r.Header.Set("Accept-Encoding", "gzip")
		var sent int
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			serve(w, r)
			if w.Code != http.StatusOK {
				b.Fatalf("status %d", w.Code)
			}
			sent = w.Body.Len()
		}
		b.ReportMetric(float64(sent), "bytes_sent/op")
	}
	b.Run("console", func(b *testing.B) {
		run(b, func(w http.ResponseWriter, r *http.Request) { h.File(w, r, "app.js") })
	})
	b.Run("fileserver+gzip", func(b *testing.B) {
		run(b, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			fileServer.ServeHTTP(gzipWriter{w, zw}, r)
			zw.Close()
		})
	})
}

// gzipWriter sends a handler's body through a gzip writer.
type gzipWriter struct {
	http.ResponseWriter
	zw io.Writer
}

func (g gzipWriter) Write(p []byte) (int, error) { return g.zw.Write(p) }
