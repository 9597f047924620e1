package httpapi

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/events"
)

// regionEvents records the region a stream was asked for.
type regionEvents struct{ got chan string }

func (e regionEvents) SubscribeEvents(req *events.Request) (EventSubscription, error) {
	e.got <- req.Region
	return idleSub{}, nil
}

type idleSub struct{}

func (idleSub) NextFrame(ctx context.Context) ([]byte, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// The routes answered here without a region-forwarded RPC (the volume and
// plugin lists, one plugin, the event stream) refuse a region no server
// knows as every forwarded route does (400 "No path to region"), instead
// of answering with this region's data; a known one is served.
func TestUnknownRegionRefused(t *testing.T) {
	got := make(chan string, 4)
	env := newEnv(t, func(c *Config) { c.Events = regionEvents{got} })
	env.rpc.reply("Region.List", []string{"east", "global"})
	for _, c := range []struct {
		path string
		code int
		want string
	}{
		{"/v1/volumes?region=nope", 400, `No path to region "nope"`},
		{"/v1/volumes?type=csi&region=nope", 400, `No path to region "nope"`},
		{"/v1/volumes?type=host&region=nope", 400, `No path to region "nope"`},
		{"/v1/volumes?type=nfs&region=east", 400, `unsupported volume type "nfs"`},
		{"/v1/volumes?region=east", 200, "[]"},
		{"/v1/volumes?region=global", 200, "[]"},
		{"/v1/plugins?region=nope", 400, `No path to region "nope"`},
		{"/v1/plugins?type=csi&region=nope", 400, `No path to region "nope"`},
		{"/v1/plugins?region=east", 200, "[]"},
		{"/v1/plugin/csi/x?region=nope", 400, `No path to region "nope"`},
		{"/v1/plugin/csi/x?region=east", 404, "plugin not found"},
		{"/v1/event/stream?region=nope", 400, `No path to region "nope"`},
		{"/v1/event/stream?region=nope&topic=Job", 400, `No path to region "nope"`},
		{"/v1/event/stream?region=east&index=x", 400, "index"},
	} {
		code, body := getWithin(t, env, c.path)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %d %q, want %d %q", c.path, code, body, c.code, c.want)
		}
	}
	for len(got) > 0 {
		t.Errorf("a refused stream subscribed (region %q)", <-got)
	}
	// A known region's stream is asked of that region; this one's, of
	// this agent's broker.
	for q, want := range map[string]string{"?region=east": "east", "?region=global": "", "": ""} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			req, _ := http.NewRequestWithContext(ctx, "GET", env.srv.URL+"/v1/event/stream"+q, nil)
			if resp, err := env.srv.Client().Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		if r := <-got; r != want {
			t.Errorf("stream%s asked of region %q, want %q", q, r, want)
		}
		cancel()
		<-done
	}
}

// getWithin GETs path, giving up after 5 s (a stream that was not refused
// would otherwise hold the test).
func getWithin(t *testing.T, env *testEnv, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", env.srv.URL+path, nil)
	resp, err := env.srv.Client().Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The always-empty lists (volumes, plugins) check their query as every
// list does: a malformed filter or blocking-query parameter is a 400
// naming it, not an empty answer.
func TestEmptyListsHostile(t *testing.T) {
	env := newEnv(t, nil)
	for _, base := range []string{"/v1/volumes", "/v1/plugins"} {
		for _, c := range []struct{ query, want string }{
			{"filter=((", "failed to read filter expression"},
			{"filter=" + strings.Repeat("(", 5000), "failed to read filter expression"},
			{"index=abc", `Invalid index "abc"`},
			{"wait=-1s", `Invalid wait time "-1s"`},
			{"stale=maybe", `"stale"`},
			{"type=bogus", `unsupported`},
		} {
			code, body := getWithin(t, env, base+"?"+c.query)
			if code != 400 || !strings.Contains(body, c.want) {
				t.Errorf("GET %s?%s: %d %q, want 400 %q", base, c.query, code, body, c.want)
			}
		}
		for _, q := range []string{"namespace=*", "prefix=%ff", "filter=ID+%3D%3D+%22x%22", "per_page=1&next_token=zzz"} {
			if code, body := getWithin(t, env, base+"?"+q); code != 200 || strings.TrimSpace(body) != "[]" {
				t.Errorf("GET %s?%s: %d %q, want 200 []", base, q, code, body)
			}
		}
	}
}
