package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/acl"
)

// `nomad volume status` lists CSI volumes: Drover has none (it runs no CSI
// plugins), and says so with an empty list, not a 404.
func TestVolumesListEmpty(t *testing.T) {
	env := newEnv(t, nil)
	vols, qm, err := env.client.CSIVolumes().List(nil)
	if err != nil {
		t.Fatalf("list CSI volumes: %v", err)
	}
	if len(vols) != 0 || qm.LastIndex != 1 {
		t.Fatalf("got %d volumes at index %d, want none at index 1", len(vols), qm.LastIndex)
	}
	for _, q := range []string{"", "?type=host"} {
		code, _, body := env.raw(t, "GET", "/v1/volumes"+q, "")
		if code != 200 || strings.TrimSpace(body) != "[]" {
			t.Fatalf("GET /v1/volumes%s: %d %s, want 200 []", q, code, body)
		}
	}
	code, _, body := env.raw(t, "GET", "/v1/volumes?type=nfs", "")
	if code != 400 || !strings.Contains(body, "type") || !strings.Contains(body, "nfs") {
		t.Fatalf("unknown type: %d %s, want 400 naming the type", code, body)
	}
	if code, _, _ := env.raw(t, "PUT", "/v1/volumes", `{"Volumes":[]}`); code != http.StatusMethodNotAllowed {
		t.Fatalf("PUT /v1/volumes: %d, want 405", code)
	}
}

// A blocking query on the list waits for its wait time (the list never
// changes) instead of answering at once and spinning its caller.
func TestVolumesListBlocks(t *testing.T) {
	env := newEnv(t, nil)
	start := time.Now()
	_, qm, err := env.client.CSIVolumes().List(&api.QueryOptions{WaitIndex: 1, WaitTime: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond || qm.LastIndex != 1 {
		t.Fatalf("blocking query answered after %v at index %d, want >= 300ms at index 1", waited, qm.LastIndex)
	}
}

// `nomad volume status <id>` reads one volume: an ID Drover does not have
// (it has no CSI or dynamic host volumes) is Nomad's "volume not found"
// 404, not the mux's plain-text "404 page not found"; deletes and CSI
// registers answer Nomad's errors for a missing volume or plugin.
func TestVolumeSpecificRoutes(t *testing.T) {
	env := newEnv(t, nil)
	_, _, err := env.client.CSIVolumes().Info("vol1", nil)
	wantStatus(t, err, 404, "volume not found")
	_, _, err = env.client.HostVolumes().Get("hv1", nil)
	wantStatus(t, err, 404, "volume not found")
	wantStatus(t, env.client.CSIVolumes().Deregister("vol1", true, nil), 404, "volume not found: vol1")
	_, _, err = env.client.HostVolumes().Delete(&api.HostVolumeDeleteRequest{ID: "hv1"}, nil)
	wantStatus(t, err, 404, "no such volume: hv1")
	_, err = env.client.CSIVolumes().Register(&api.CSIVolume{ID: "vol1", PluginID: "ebs"}, nil)
	wantStatus(t, err, 400, "no CSI plugin named: ebs could be found")

	for _, tc := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"GET", "/v1/volume/csi/vol1", "", 404, "volume not found"},
		{"GET", "/v1/volume/csi/a%2Fb?namespace=other", "", 404, "volume not found"},
		{"GET", "/v1/volume/host/hv1", "", 404, "volume not found"},
		{"GET", "/v1/volume/csi/vol1?wait=soon", "", 400, "wait"},
		{"GET", "/v1/volume/csi/vol1?region=nowhere", "", 400, `No path to region "nowhere"`},
		{"GET", "/v1/volume/nfs/vol1", "", 404, "resource not found"},
		{"GET", "/v1/volume/csi/", "", 404, "resource not found"},
		{"GET", "/v1/volume/csi/vol1/extra", "", 404, "resource not found"},
		{"DELETE", "/v1/volume/csi/vol1?force=maybe", "", 400, "force"},
		{"PUT", "/v1/volume/csi/vol1", "", 400, "Request body is empty"},
		{"PUT", "/v1/volume/csi/vol1", `{"Volumes":[]}`, 400, "missing volume definition"},
		{"PUT", "/v1/volume/csi/vol1", `{"Volumes":[null]}`, 400, "Volumes[0] is null"},
		{"PUT", "/v1/volume/csi/vol1", `{"Volumes":[{"PluginID":"ebs"}]}`, 400, "Volumes[0].ID"},
		{"PUT", "/v1/volume/csi/vol1", `{"Volumes":[{"ID":"vol1"}]}`, 400, "Volumes[0].PluginID"},
		{"POST", "/v1/volume/csi/vol1", `{}`, 405, "Invalid method"},
		{"PUT", "/v1/volume/host/hv1", `{}`, 405, "Invalid method"},
	} {
		code, hdr, body := env.raw(t, tc.method, tc.path, tc.body)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %q, want %d containing %q", tc.method, tc.path, code, body, tc.code, tc.want)
		}
		if tc.method == "GET" && code == 404 && tc.want == "volume not found" && hdr.Get("X-Nomad-Index") != "1" {
			t.Errorf("%s %s: X-Nomad-Index %q, want 1", tc.method, tc.path, hdr.Get("X-Nomad-Index"))
		}
	}

	// A blocking read waits for its wait time (nothing ever changes)
	// instead of spinning its caller.
	start := time.Now()
	_, _, err = env.client.CSIVolumes().Info("vol1", &api.QueryOptions{WaitIndex: 1, WaitTime: 300 * time.Millisecond})
	wantStatus(t, err, 404, "volume not found")
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Fatalf("blocking read answered after %v, want >= 300ms", waited)
	}
}

// One volume is authorized as Nomad's volume endpoints authorize it, in
// the request's namespace: a CSI read needs csi-read-volume,
// csi-mount-volume or read-job, a CSI write csi-write-volume; a host
// volume read host-volume-read (or a capability Nomad's policies expand to
// it), a delete host-volume-delete or host-volume-write.
func TestVolumeSpecificACL(t *testing.T) {
	caps := func(c ...string) *acl.ACL {
		return compileRules(t, `namespace "default" { capabilities = ["`+strings.Join(c, `","`)+`"] }`)
	}
	res := matrixResolver{
		"csi-read":  caps("csi-read-volume"),
		"csi-mount": caps("csi-mount-volume"),
		"read-job":  caps("read-job"),
		"csi-list":  caps("csi-list-volume"),
		"csi-write": caps("csi-write-volume"),
		"hv-read":   caps("host-volume-read"),
		"hv-create": caps("host-volume-create"),
		"hv-reg":    caps("host-volume-register"),
		"hv-write":  caps("host-volume-write"),
		"hv-delete": caps("host-volume-delete"),
		"other-ns":  compileRules(t, `namespace "other" { policy = "write" }`),
	}
	env := newEnv(t, nil)
	env.srv.Config.Handler = NewHandler(Config{RPC: env.rpc, Agent: &fakeAgent{serverOK: true}, Auth: &ACLAuthorizer{Resolver: res, RPC: env.rpc}})
	allowed := map[string][]string{
		"GET /v1/volume/csi/vol1":    {"csi-read", "csi-mount", "read-job"},
		"PUT /v1/volume/csi/vol1":    {"csi-write"},
		"DELETE /v1/volume/csi/vol1": {"csi-write"},
		"GET /v1/volume/host/hv1":    {"hv-read", "hv-create", "hv-reg", "hv-write"},
		"DELETE /v1/volume/host/hv1": {"hv-delete", "hv-write"},
	}
	for key, ok := range allowed {
		method, path, _ := strings.Cut(key, " ")
		for tok := range res {
			req, _ := http.NewRequest(method, env.srv.URL+path, strings.NewReader(`{"Volumes":[{"ID":"vol1","PluginID":"ebs"}]}`))
			req.Header.Set("X-Nomad-Token", tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if want := slices.Contains(ok, tok); want != (resp.StatusCode != http.StatusForbidden) {
				t.Errorf("%s token %s: %d, allowed %v", key, tok, resp.StatusCode, want)
			}
		}
	}
}
