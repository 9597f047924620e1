package httpapi

import (
	"bufio"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/structs"
)

// swapResolver resolves one token to an ACL the test may change.
type swapResolver struct {
	mu sync.Mutex
	a  *acl.ACL
}

func (s *swapResolver) ResolveACL(secret string) (*acl.ACL, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if secret != "t" {
		return nil, structs.NewErrCoded(403, "ACL token not found")
	}
	return s.a, nil
}

func publishNSJob(b *events.Broker, index uint64, ns, id string) {
	b.Publish(index, structs.JobRegisterRequestType, []memdb.Changes{{
		{Table: "jobs", After: &structs.Job{ID: id, Namespace: ns, Type: "service"}},
	}})
}

// A stream of every namespace (namespace=*) read with a token that is not
// a management token carries only the job events of the namespaces the
// token may read, and follows a change of the token's policy from the
// next event on. Before, the stream was refused (403) for such a token.
func TestEventStreamEveryNamespaceFilteredByToken(t *testing.T) {
	b := events.NewBroker(20)
	t.Cleanup(b.Close)
	res := &swapResolver{a: compileRules(t, `namespace "web" { policy = "read" }`)}
	env := newEnv(t, nil)
	env.srv.Config.Handler = NewHandler(Config{RPC: env.rpc, Agent: &fakeAgent{serverOK: true},
		Auth: &ACLAuthorizer{Resolver: res, RPC: env.rpc}, Events: brokerEvents{b},
		EventHeartbeat: 20 * time.Millisecond, EventRecheck: time.Nanosecond})
	req, _ := http.NewRequest("GET", env.srv.URL+"/v1/event/stream?namespace=*&topic=Job", nil)
	req.Header.Set("X-Nomad-Token", "t")
	hc := &http.Client{Timeout: 20 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stream of every namespace with a namespace token: %s", resp.Status)
	}
	r := bufio.NewReader(resp.Body)
	readUntil := func(marker string) string {
		t.Helper()
		var seen []string
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended before %s: %v; read:\n%s", marker, err, strings.Join(seen, ""))
			}
			seen = append(seen, line)
			if strings.Contains(line, `"Key":"`+marker+`"`) {
				return strings.Join(seen, "")
			}
		}
	}
	publishNSJob(b, 5, "web", "w1")
	publishNSJob(b, 6, "other", "o1")
	publishNSJob(b, 7, "web", "w2")
	if got := readUntil("w2"); !strings.Contains(got, `"Key":"w1"`) || strings.Contains(got, `"o1"`) {
		t.Fatalf("web-read token's stream:\n%s\nwant w1 and w2, not o1", got)
	}
	res.mu.Lock()
	res.a = compileRules(t, `namespace "other" { policy = "read" }`)
	res.mu.Unlock()
	publishNSJob(b, 8, "web", "w3")
	publishNSJob(b, 9, "other", "o2")
	if got := readUntil("o2"); strings.Contains(got, `"w3"`) {
		t.Fatalf("after the policy moved to namespace other the stream still sent web's events:\n%s", got)
	}
}
