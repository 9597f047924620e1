package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
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
