package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// put sends body to path and returns the status and response text. A
// server may answer (413) before it has read the whole body; that answer
// is what the caller gets.
func (a *agent) put(path string, body []byte) (int, string) {
	a.t.Helper()
	req, err := http.NewRequest("PUT", a.url(path), bytes.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("PUT %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// deepJobBody is a register body whose task config nests depth levels.
func deepJobBody(id string, depth int) []byte {
	return []byte(`{"Job":{"ID":"` + id + `","Name":"` + id + `","Type":"batch","Datacenters":["*"],` +
		`"TaskGroups":[{"Name":"g","Count":1,"Tasks":[{"Name":"t","Driver":"raw_exec",` +
		`"Config":{"command":"/bin/true","nest":` + strings.Repeat(`{"a":`, depth) + `1` + strings.Repeat(`}`, depth) + `},` +
		`"Resources":{"CPU":20,"MemoryMB":32}}]}]}}`)
}

// bigJobBody is a register body of about size bytes.
func bigJobBody(id string, size int) []byte {
	job := rawExecJob(id, "batch", 1, "true")
	job.TaskGroups[0].Tasks[0].Meta = map[string]string{"pad": strings.Repeat("x", size)}
	b, _ := json.Marshal(map[string]any{"Job": job})
	return b
}

// sendBadInputs sends each hostile input of issue 11 items 3 and 4 and
// checks each is refused with the 4xx a user should see.
func sendBadInputs(t *testing.T, a *agent) {
	t.Helper()
	for _, c := range []struct {
		name string
		path string
		body []byte
		code int
		msg  string
	}{
		// Item 3: a config nested 3,000 levels deep was committed and
		// then failed to decode on every server (500, apply failed).
		{"deep config", "/v1/jobs", deepJobBody("deep", 3000), 400, "more than 100 levels deep"},
		{"deep config just past the task limit", "/v1/jobs", deepJobBody("deep64", 70), 400, "more than 64 levels deep"},
		// A jobspec nested two million levels overflowed the parser's
		// stack and killed the agent.
		{"deep jobspec", "/v1/jobs/parse", mustJSON(t, map[string]string{"JobHCL": `job "x" { group "g" { task "t" { config { nest = ` +
			strings.Repeat("[", 2_000_000) + strings.Repeat("]", 2_000_000) + ` } } } }`}), 413, "Job spec too large to parse"},
		{"deep jobspec under the size limit", "/v1/jobs/parse", mustJSON(t, map[string]string{"JobHCL": `job "x" { group "g" { task "t" { config { nest = ` +
			strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000) + ` } } } }`}), 400, "more than 100 levels deep"},
		// Item 4: a 50 MB job was accepted and memory grew by gigabytes.
		{"50 MB job", "/v1/jobs", bigJobBody("huge", 50<<20), 413, "Request body too large"},
	} {
		code, body := a.put(c.path, c.body)
		if code != c.code || !strings.Contains(body, c.msg) {
			t.Fatalf("%s: got %d %q, want %d containing %q", c.name, code, tail(body, 3), c.code, c.msg)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Issue 11 items 3 and 4 against a non-dev server, then the fault test: the
// server answers every bad input with a 4xx and stays healthy; killed with
// SIGKILL and restarted on the same data dir it comes up healthy with every
// earlier job intact, and nothing in its log says an entry failed to apply.
func TestBadInputIsRefusedAndSurvivesKill(t *testing.T) {
	dataDir := t.TempDir()
	extra := map[string]any{"server": map[string]any{"enabled": true, "bootstrap_expect": 1}}
	a := startAgent(t, dataDir, nil, extra)
	a.waitReady(false)

	good := map[string]uint64{}
	for _, id := range []string{"good", "good-4mb"} {
		body := bigJobBody(id, 1)
		if id == "good-4mb" {
			body = bigJobBody(id, 4<<20) // under the 8 MiB default
		}
		if code, msg := a.put("/v1/jobs", body); code != 200 {
			t.Fatalf("register %s: %d %s", id, code, msg)
		}
	}
	sendBadInputs(t, a)

	health := func(b *agent) {
		t.Helper()
		resp, err := http.Get(b.url("/v1/agent/health"))
		if err != nil {
			t.Fatalf("health after bad input: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("health after bad input: %d", resp.StatusCode)
		}
	}
	health(a)
	jobs, _, err := a.client.Jobs().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		good[j.ID] = j.JobModifyIndex
	}
	if len(good) != 2 || good["good"] == 0 || good["good-4mb"] == 0 {
		t.Fatalf("want exactly the two good jobs stored, got %v", good)
	}

	a.kill()
	b := startAgent(t, dataDir, nil, extra)
	b.waitReady(false)
	health(b)
	jobs, _, err = b.client.Jobs().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	after := map[string]uint64{}
	for _, j := range jobs {
		after[j.ID] = j.JobModifyIndex
	}
	if fmt.Sprint(after) != fmt.Sprint(good) {
		t.Fatalf("jobs after kill -9 and restart: %v, want %v", after, good)
	}
	if j, _, err := b.client.Jobs().Info("good-4mb", nil); err != nil || len(j.TaskGroups[0].Tasks[0].Meta["pad"]) != 4<<20 {
		t.Fatalf("the 4 MB job did not come back whole: %v", err)
	}
	for _, log := range []string{a.out.String(), b.out.String()} {
		for _, bad := range []string{"apply failed", "cannot be decoded", "panic"} {
			if strings.Contains(log, bad) {
				t.Fatalf("agent log contains %q:\n%s", bad, tail(log, 40))
			}
		}
	}
	// The restarted server refuses the same inputs the same way.
	sendBadInputs(t, b)
	health(b)
}
