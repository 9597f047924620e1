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
// {"Index":n,"Events":[...]}. Each event is encoded once and shared by
// every subscriber.
func Frame(index uint64, evs []*Event) []byte {
	n := 32
	for _, e := range evs {
		n += len(e.JSON()) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"Index":`...)
	b = strconv.AppendUint(b, index, 10)
	b = append(b, `,"Events":[`...)
	for i, e := range evs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e.JSON()...)
	}
	b = append(b, "]}\n"...)
	return b
}
