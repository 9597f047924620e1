package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// `nomad plugin status` lists CSI plugins: Drover runs none, and says so
// with an empty list; one plugin is "plugin not found", as Nomad answers.
func TestPluginsListEmpty(t *testing.T) {
	env := newEnv(t, nil)
	plugins, qm, err := env.client.CSIPlugins().List(nil)
	if err != nil {
		t.Fatalf("list CSI plugins: %v", err)
	}
	if len(plugins) != 0 || qm.LastIndex != 1 {
		t.Fatalf("got %d plugins at index %d, want none at index 1", len(plugins), qm.LastIndex)
	}
	code, _, body := env.raw(t, "GET", "/v1/plugins", "")
	if code != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("GET /v1/plugins: %d %s, want 200 []", code, body)
	}
	code, _, body = env.raw(t, "GET", "/v1/plugins?type=device", "")
	if code != 400 || !strings.Contains(body, "type") || !strings.Contains(body, "device") {
		t.Fatalf("unknown type: %d %s, want 400 naming the type", code, body)
	}
	if code, _, _ := env.raw(t, "PUT", "/v1/plugins", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("PUT /v1/plugins: %d, want 405", code)
	}

	_, _, err = env.client.CSIPlugins().Info("ebs", nil)
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "plugin not found") {
		t.Fatalf("plugin info: %v, want 404 plugin not found", err)
	}
	for _, p := range []string{"/v1/plugin/csi/", "/v1/plugin/host/ebs"} {
		if code, _, body := env.raw(t, "GET", p, ""); code != 404 {
			t.Fatalf("GET %s: %d %s, want 404", p, code, body)
		}
	}
}

// The list needs plugin:list, one plugin plugin:read (Nomad's rules); a
// namespace policy grants neither.
func TestACLPlugins(t *testing.T) {
	res := matrixResolver{
		"list": compileRules(t, `plugin { policy = "list" }`),
		"read": compileRules(t, `plugin { policy = "read" }`),
		"ns":   compileRules(t, `namespace "default" { policy = "write" }`),
	}
	env := newEnv(t, nil)
	env.srv.Config.Handler = NewHandler(Config{RPC: env.rpc, Agent: &fakeAgent{serverOK: true}, Auth: &ACLAuthorizer{Resolver: res, RPC: env.rpc}})
	for _, tc := range []struct {
		tok, path string
		want      int
	}{
		{"list", "/v1/plugins?type=csi", 200},
		{"list", "/v1/plugin/csi/ebs", 403},
		{"read", "/v1/plugins?type=csi", 200},
		{"read", "/v1/plugin/csi/ebs", 404},
		{"ns", "/v1/plugins?type=csi", 403},
		{"ns", "/v1/plugin/csi/ebs", 403},
	} {
		req, _ := http.NewRequest("GET", env.srv.URL+tc.path, nil)
		req.Header.Set("X-Nomad-Token", tc.tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("token %q GET %s: %d, want %d", tc.tok, tc.path, resp.StatusCode, tc.want)
		}
	}
}
