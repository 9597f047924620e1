package cli

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	mcli "github.com/hashicorp/cli"
)

// apiEcho answers every request with what it received.
func apiEcho(t *testing.T, status int) (*httptest.Server, *http.Request, *[]byte) {
	var got http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = *r.Clone(r.Context())
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("X-Nomad-Index", "7")
		w.WriteHeader(status)
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &got, &body
}

func runOperatorAPI(t *testing.T, stdin io.Reader, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	c := &OperatorAPICommand{Meta: Meta{Ui: &mcli.BasicUi{Writer: &out, ErrorWriter: &errb}, out: &out}, Stdin: stdin}
	code := c.Run(args)
	return out.String(), errb.String(), code
}

func TestOperatorAPIGet(t *testing.T) {
	srv, got, _ := apiEcho(t, 200)
	out, errb, code := runOperatorAPI(t, strings.NewReader(""), "-address="+srv.URL, "-token=secret", "-namespace=prod",
		"-filter", `Status == "running"`, "-H", "X-Extra: 1", "-verbose", "/v1/jobs")
	if code != 0 || out != `{"ok":true}` {
		t.Fatalf("code %d out %q err %s", code, out, errb)
	}
	if got.Method != "GET" || got.URL.Path != "/v1/jobs" || got.URL.Query().Get("namespace") != "prod" ||
		got.URL.Query().Get("filter") != `Status == "running"` || got.Header.Get("X-Nomad-Token") != "secret" ||
		got.Header.Get("X-Extra") != "1" {
		t.Fatalf("request: %s %s %v", got.Method, got.URL, got.Header)
	}
	if !strings.Contains(errb, "> GET ") || !strings.Contains(errb, "< X-Nomad-Index: 7") {
		t.Fatalf("-verbose: %s", errb)
	}
}

func TestOperatorAPIBodyFromStdinPosts(t *testing.T) {
	srv, got, body := apiEcho(t, 200)
	if _, errb, code := runOperatorAPI(t, strings.NewReader(`{"Job":{}}`), "-address="+srv.URL, "v1/jobs"); code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	if got.Method != "POST" || string(*body) != `{"Job":{}}` || got.URL.Path != "/v1/jobs" {
		t.Fatalf("request: %s %s body %q", got.Method, got.URL, *body)
	}
	if _, _, code := runOperatorAPI(t, strings.NewReader(`x`), "-address="+srv.URL, "-X", "put", "/v1/system/gc"); code != 0 || got.Method != "PUT" {
		t.Fatalf("-X put: %d %s", code, got.Method)
	}
}

// A non-2xx answer prints its body and exits 1.
func TestOperatorAPIErrorStatus(t *testing.T) {
	srv, _, _ := apiEcho(t, 404)
	out, errb, code := runOperatorAPI(t, nil, "-address="+srv.URL, "/v1/job/nope")
	if code != 1 || out != `{"ok":true}` || !strings.Contains(errb, "404") {
		t.Fatalf("code %d out %q err %q", code, out, errb)
	}
}

func TestOperatorAPIDryRun(t *testing.T) {
	out, _, code := runOperatorAPI(t, strings.NewReader(`{"a":'b'}`), "-address=https://nomad.example:4646", "-token=t0k",
		"-ca-cert=/etc/ca.pem", "-dryrun", "/v1/jobs?prefix=web")
	want := `curl -X POST --cacert '/etc/ca.pem' -H 'X-Nomad-Token: t0k' --data-binary '{"a":'\''b'\''}' 'https://nomad.example:4646/v1/jobs?prefix=web'`
	if code != 0 || strings.TrimSpace(out) != want {
		t.Fatalf("code %d\n got %s\nwant %s", code, out, want)
	}
}

func TestOperatorAPIBadInput(t *testing.T) {
	for _, args := range [][]string{{}, {"-H", "nocolon", "/v1/jobs"}, {"ftp://x/v1/jobs"}} {
		if _, errb, code := runOperatorAPI(t, nil, args...); code != 1 || errb == "" {
			t.Fatalf("%v: code %d err %q", args, code, errb)
		}
	}
}
