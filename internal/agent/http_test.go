package agent

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPprofServedBesideAPI(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("api")) })
	srv := httptest.NewServer(withPprof(api))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String()
	}
	if code, body := get("/debug/pprof/heap?debug=1"); code != 200 || !strings.Contains(body, "heap profile") {
		t.Fatalf("heap profile: %d %.80q", code, body)
	}
	if code, body := get("/v1/jobs"); code != 200 || body != "api" {
		t.Fatalf("API request not passed through: %d %q", code, body)
	}
}
