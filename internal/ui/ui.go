// Package ui owns Drover's web UI: static assets embedded in the binary and
// served under /ui/. It never talks to the server's internals: the browser
// client speaks only the public HTTP API (/v1/...), so the same pages work
// against any agent, a client agent forwarding to servers included.
//
// Why a client in plain ES modules and not server-rendered pages: every page
// must refresh live, and the public API already offers that through
// blocking queries (?index=N). A browser module that loops on those queries
// re-renders only when the index moves and needs no per-page push channel
// on the agent; server-rendered pages would need the same loop in the agent
// plus a push channel to the browser. The modules are loaded as they are
// written (no bundler, no build step): index.html imports app.js, which
// imports the page modules. Measured with the browser tests (see
// TestUIBench): the jobs page with 10,000 jobs paints its first page of 50
// in well under a second because the list is paginated on the server
// (per_page/next_token), not in the browser.
//
// Every path under /ui/ that is not an asset answers index.html, so that
// Nomad's UI links (/ui/jobs/<id>@<namespace>, /ui/allocations/<id>, ...)
// open the right page; the client's router reads the path.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// Prefix is where the UI is served.
const Prefix = "/ui/"

// Handler serves the UI under Prefix: assets by name, index.html for every
// other path (the client routes). Only GET and HEAD are answered.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embed directive guarantees the directory
	}
	files := http.FileServer(http.FS(sub))
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Invalid method", http.StatusMethodNotAllowed)
			return
		}
		// No page may load anything from another origin.
		w.Header().Set("Content-Security-Policy", "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; style-src 'self' 'unsafe-inline'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		rest := strings.TrimPrefix(r.URL.Path, Prefix)
		if rest != "" && isAsset(sub, rest) {
			if strings.HasSuffix(rest, ".js") {
				w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			}
			w.Header().Set("Cache-Control", "no-cache")
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/" + rest
			files.ServeHTTP(w, r2)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(index)
	})
}

// isAsset reports whether name is a file among the assets. Only names with
// an extension at the top level are assets (the assets are flat).
func isAsset(sub fs.FS, name string) bool {
	if path.Ext(name) == "" || strings.Contains(name, "/") {
		return false
	}
	st, err := fs.Stat(sub, name)
	return err == nil && !st.IsDir()
}

// Mount returns a handler that serves the UI under Prefix, redirects "/"
// there (as Nomad's agent does), and hands every other path to api.
func Mount(api http.Handler) http.Handler {
	ui := Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/ui":
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		case strings.HasPrefix(r.URL.Path, Prefix):
			ui.ServeHTTP(w, r)
		case r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			http.Redirect(w, r, Prefix, http.StatusTemporaryRedirect)
		default:
			api.ServeHTTP(w, r)
		}
	})
}
