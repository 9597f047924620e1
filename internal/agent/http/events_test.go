package httpapi

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/structs"
)

type brokerEvents struct{ b *events.Broker }

func (e brokerEvents) SubscribeEvents(req *events.Request) (EventSubscription, error) {
	return e.b.Subscribe(req), nil
}

func newEventsEnv(t *testing.T, size int) (*testEnv, *events.Broker) {
	b := events.NewBroker(size)
	t.Cleanup(b.Close)
	return newEnv(t, func(c *Config) { c.Events = brokerEvents{b} }), b
}

func publishJob(b *events.Broker, index uint64, id string) {
	b.Publish(index, structs.JobRegisterRequestType, []memdb.Changes{{
		{Table: "jobs", After: &structs.Job{ID: id, Namespace: "default", Type: "service"}},
		{Table: "evals", After: &structs.Evaluation{ID: "e-" + id, Namespace: "default", JobID: id}},
	}})
}

func TestEventStreamRejectsBadQueries(t *testing.T) {
	env, _ := newEventsEnv(t, 10)
	for _, c := range []struct {
		path string
		code int
		want string
	}{
		{"/v1/event/stream?topic=Evaluation:::*", 400, "Invalid key value pair"},
		{"/v1/event/stream?index=x", 400, "index"},
	} {
		if code, _, body := env.raw(t, "GET", c.path, ""); code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %q", c.path, code, body)
		}
	}
	if code, _, _ := env.raw(t, "PUT", "/v1/event/stream", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("PUT answered %d", code)
	}
	bare := newEnv(t, nil)
	if code, _, body := bare.raw(t, "GET", "/v1/event/stream", ""); code != http.StatusNotImplemented || !strings.Contains(body, "enable_event_broker") {
		t.Errorf("no broker: %d %q", code, body)
	}
}

// The official client reads the frames: filtered by topic and key, in
// index order, with Nomad's payloads.
func TestEventStreamWithGoClient(t *testing.T) {
	env, b := newEventsEnv(t, 10)
	publishJob(b, 5, "web")
	publishJob(b, 6, "api")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := env.client.EventStream().Stream(ctx, map[api.Topic][]string{api.TopicJob: {"web", "db"}}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	publishJob(b, 7, "db")
	var got []uint64
	for len(got) < 2 {
		select {
		case ev := <-ch:
			if ev.Err != nil {
				t.Fatal(ev.Err)
			}
			if len(ev.Events) != 1 {
				t.Fatalf("frame %d has %d events", ev.Index, len(ev.Events))
			}
			job, err := ev.Events[0].Job()
			if err != nil || job == nil || job.ID == nil {
				t.Fatalf("job payload: %v %v", job, err)
			}
			got = append(got, ev.Index)
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out; got %v", got)
		}
	}
	if got[0] != 5 || got[1] != 7 {
		t.Fatalf("indexes %v, want [5 7]", got)
	}
}

func TestEventStreamHeartbeat(t *testing.T) {
	b := events.NewBroker(10)
	t.Cleanup(b.Close)
	env := newEnv(t, func(c *Config) { c.Events, c.EventHeartbeat = brokerEvents{b}, 20*time.Millisecond })
	resp, err := http.Get(env.srv.URL + "/v1/event/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "{}\n" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("first line %q (%v), content type %q", line, err, resp.Header.Get("Content-Type"))
	}
}

// A reader that stops reading while the server moves past its buffer gets
// a last line saying so, with the index to resume from; the publisher
// never waited for it.
func TestEventStreamSlowReaderDropped(t *testing.T) {
	env, b := newEventsEnv(t, 2)
	// The timeout ends the read should the stream (wrongly) stay open.
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(env.srv.URL + "/v1/event/stream?topic=Node")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// 40 MB of events, far past what socket buffers hold, while nobody
	// reads.
	big := strings.Repeat("x", 1<<20)
	start := time.Now()
	for i := uint64(1); i <= 40; i++ {
		b.Publish(i, structs.NodeRegisterRequestType, []memdb.Changes{{
			{Table: "nodes", After: &structs.Node{ID: "n1", Attributes: map[string]string{"pad": big}}}}})
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("publishing took %v: it waited for the reader", d)
	}
	r := bufio.NewReaderSize(resp.Body, 2<<20)
	var last string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break
		}
		last = line
	}
	if !strings.HasPrefix(last, `{"Error":`) || !strings.Contains(last, "fell behind") || !strings.Contains(last, "index=") {
		t.Fatalf("last line %.200q", last)
	}
}

// A stream ends once its token stops being allowed (deleted, expired, its
// policy changed): the token is checked again while the stream runs. It
// was checked only when the stream opened, so a revoked token went on
// receiving every job and allocation event for as long as it kept the
// connection open.
func TestEventStreamEndsWhenTheTokenIsRevoked(t *testing.T) {
	b := events.NewBroker(10)
	t.Cleanup(b.Close)
	env := newEnv(t, func(c *Config) {
		c.Events, c.EventHeartbeat, c.EventRecheck = brokerEvents{b}, 20*time.Millisecond, time.Nanosecond
	})
	req, _ := http.NewRequest("GET", env.srv.URL+"/v1/event/stream?topic=Job", nil)
	req.Header.Set("X-Nomad-Token", "soon-revoked")
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	publishJob(b, 5, "web")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before the first event: %v", err)
		}
		if strings.Contains(line, `"Index":5`) {
			break
		}
	}
	env.auth.mu.Lock()
	env.auth.deny = "soon-revoked"
	env.auth.mu.Unlock()
	publishJob(b, 6, "secret")
	var rest []string
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			rest = append(rest, line)
		}
		if err != nil {
			break
		}
	}
	all := strings.Join(rest, "")
	if strings.Contains(all, "secret") || len(rest) == 0 || !strings.Contains(rest[len(rest)-1], `"Error":"Permission denied"`) {
		t.Fatalf("after the token was revoked the stream sent:\n%s", all)
	}
}
