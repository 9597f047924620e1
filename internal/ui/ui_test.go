package ui

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string) (int, http.Header, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, rec.Header(), string(b)
}

// Nomad's UI URLs all open the UI; assets are served with their types; "/"
// and "/ui" redirect; the API still answers everything else.
func TestMountServesUIAndAPI(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "api "+r.URL.Path) })
	h := Mount(api)
	for _, p := range []string{"/ui/", "/ui/jobs", "/ui/jobs/web@prod", "/ui/jobs/web/allocations", "/ui/allocations/abc/web/logs", "/ui/clients/n1", "/ui/settings/tokens", "/ui/jobs/index.html", "/ui/variables", "/ui/variables/var/app/config@prod"} {
		code, hdr, body := get(t, h, "GET", p)
		if code != 200 || !strings.Contains(body, `<script type="module" src="/ui/app.js">`) || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %q", p, code, hdr.Get("Content-Type"))
		}
	}
	code, hdr, body := get(t, h, "GET", "/ui/app.js")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/javascript") || !strings.Contains(body, "import") {
		t.Errorf("app.js: %d %q", code, hdr.Get("Content-Type"))
	}
	if code, hdr, _ := get(t, h, "GET", "/ui/style.css"); code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/css") {
		t.Errorf("style.css: %d %q", code, hdr.Get("Content-Type"))
	}
	for _, p := range []string{"/", "/ui"} {
		if code, hdr, _ := get(t, h, "GET", p); code/100 != 3 || hdr.Get("Location") != "/ui/" {
			t.Errorf("GET %s: %d to %q, want a redirect to /ui/", p, code, hdr.Get("Location"))
		}
	}
	if code, _, body := get(t, h, "GET", "/v1/jobs"); code != 200 || body != "api /v1/jobs" {
		t.Errorf("/v1/jobs went to %d %q", code, body)
	}
	if code, _, body := get(t, h, "PUT", "/"); body != "api /" {
		t.Errorf("PUT / went to %d %q, want the API", code, body)
	}
	if code, _, _ := get(t, h, "POST", "/ui/jobs"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/jobs: %d", code)
	}
	if code, hdr, _ := get(t, h, "GET", "/ui/jobs"); code != 200 || !strings.Contains(hdr.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Error("the UI is served without a same-origin content security policy")
	}
}

// No asset loads anything from another host: fonts and icons are local.
func TestAssetsMakeNoExternalRequests(t *testing.T) {
	ext := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(assets, p)
		if m := ext.Find(b); m != nil {
			t.Errorf("%s refers to %s", p, m)
		}
		if strings.Contains(string(b), "@import") || strings.Contains(string(b), "@font-face") {
			t.Errorf("%s imports a style sheet or font", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
