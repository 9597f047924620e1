package events

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/drover-project/drover/internal/structs"
)

// Request is what a subscriber asked for: events from Index on, of the
// topics (topic -> keys; "*" is every topic or every key) in Namespace
// ("*": every namespace; events of objects outside namespaces, such as
// nodes, match every namespace).
type Request struct {
	Index     uint64
	Topics    map[string][]string
	Namespace string
	// AuthToken is the reader's ACL token: a client agent forwarding a
	// stream passes it on, and the server checks it (Event.Poll).
	AuthToken string
	// Region, when set, is another region whose stream is asked for: the
	// polls are forwarded to one of its servers (Event.Poll).
	Region string
	// AllowNamespace, when set, says which namespaces' events the reader
	// may see: a stream of every namespace ("*") opened with a token that
	// is not a management token carries only the events of namespaces the
	// token may read jobs in. Set where the token is resolved, never sent.
	AllowNamespace func(ns string) bool `codec:"-" json:"-"`
}

// ParseQuery reads Nomad's query of /v1/event/stream: index=<n>,
// repeated topic=<Topic>[:<key>] (no topic: everything), namespace
// (default "default"). Errors name the bad parameter.
func ParseQuery(q url.Values) (*Request, error) {
	req := &Request{Namespace: q.Get("namespace"), Topics: map[string][]string{}}
	if req.Namespace == "" {
		req.Namespace = structs.DefaultNamespace
	}
	if v := q.Get("index"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("index: %q is not an unsigned integer", v)
		}
		req.Index = n
	}
	raw := q["topic"]
	if len(raw) == 0 {
		req.Topics[TopicAll] = []string{"*"}
		return req, nil
	}
	for _, t := range raw {
		parts := strings.Split(t, ":")
		if len(parts) > 2 {
			return nil, fmt.Errorf("error parsing topics: Invalid key value pair for topic: %s (want topic=<Topic>:<key>)", t)
		}
		topic, key := parts[0], "*"
		if len(parts) == 2 {
			key = parts[1]
		}
		if topic == "" || key == "" {
			return nil, fmt.Errorf("error parsing topics: Invalid key value pair for topic: %s (want topic=<Topic>:<key>)", t)
		}
		req.Topics[topic] = append(req.Topics[topic], key)
	}
	return req, nil
}

// Matches reports whether e is one the subscriber asked for.
func (r *Request) Matches(e *Event) bool {
	if e.Namespace != "" && r.Namespace != "*" && e.Namespace != r.Namespace {
		return false
	}
	if e.Namespace != "" && r.AllowNamespace != nil && !r.AllowNamespace(e.Namespace) {
		return false
	}
	return keysMatch(r.Topics[TopicAll], e) || keysMatch(r.Topics[e.Topic], e)
}

// matchesAll reports whether every one of evs matches.
func (r *Request) matchesAll(evs []*Event) bool {
	for _, e := range evs {
		if !r.Matches(e) {
			return false
		}
	}
	return true
}

func keysMatch(keys []string, e *Event) bool {
	for _, k := range keys {
		if k == "*" || k == e.Key {
			return true
		}
		for _, fk := range e.FilterKeys {
			if k == fk {
				return true
			}
		}
	}
	return false
}

// Frame is the newline-terminated JSON line of one batch's events:
// {"Index":n,"Events":[...]}.
func Frame(index uint64, evs []*Event) []byte {
	encs := make([][]byte, len(evs))
	for i, e := range evs {
		encs[i] = e.JSON()
	}
	return frame(index, encs)
}

func framePrefix(index uint64) []byte {
	b := append([]byte(`{"Index":`), strconv.AppendUint(nil, index, 10)...)
	return append(b, `,"Events":[`...)
}

func frame(index uint64, encs [][]byte) []byte {
	n := 32
	for _, e := range encs {
		n += len(e) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, framePrefix(index)...)
	for i, e := range encs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	return append(b, "]}\n"...)
}
