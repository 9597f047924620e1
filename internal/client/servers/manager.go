// Package servers owns a client agent's view of the servers: the list it
// knows (configured, then learned from the servers' heartbeat answers or set
// by an operator), the order it tries them in, and the retry policy of a
// call while none answers. It never decides what a call means: the client
// and its RPC endpoints do.
//
// Each client shuffles its list (once, and again when the set of servers
// changes), so a fleet spreads over the servers; it keeps calling the first
// server until that one fails, then rotates it to the back. While no server answers, a call tries every known server, then
// waits an exponentially growing, jittered delay and tries them all again,
// up to the manager's hold time.
package servers

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Defaults of the retry policy.
const (
	DefaultHold       = 5 * time.Second
	DefaultBackoffMin = 50 * time.Millisecond
	DefaultBackoffMax = 2 * time.Second
	// DefaultCallTimeout outlasts what a server may take to answer a call
	// that does not block: its wait for a leader (5 s) and its own
	// deadline for the call forwarded to the leader (30 s).
	DefaultCallTimeout = 60 * time.Second
)

// ErrNoServers is returned when the list is empty.
var ErrNoServers = structs.NewErrCoded(500, "no servers known: set client.servers or -servers")

// CallFunc makes one call to one server. IsTransport must tell a transport
// failure (the server did not answer) from the endpoint's own error.
type CallFunc func(addr, method string, args, reply any) error

// Config builds a Manager.
type Config struct {
	// Servers is the initial (configured) list of RPC addresses.
	Servers []string
	// Call makes one RPC to one address.
	Call CallFunc
	// IsServerError reports whether err is the endpoint's answer (returned
	// to the caller as is) rather than a failure to reach the server.
	IsServerError func(error) bool
	// IsNotSent reports whether a transport failure proves the call was
	// never sent (the connection could not be made): only then, or for a
	// read, is the call sent to another server. A write that was sent and
	// got no answer may have been applied, and sending it again could
	// apply it twice. Nil: no failure proves it.
	IsNotSent func(error) bool
	// Hold bounds how long one Call keeps retrying while no server answers
	// (0: DefaultHold). BackoffMin/Max shape the waits between rounds.
	Hold       time.Duration
	BackoffMin time.Duration
	BackoffMax time.Duration
	// CallContext, when set, makes the calls instead of Call, each with a
	// deadline: CallTimeout (0: DefaultCallTimeout) plus the call's own
	// wait on the server (a blocking query's), within the caller's context
	// (a read's HTTP request). A server that took a call and hangs is
	// then given up on: a read goes on to the next server, a write
	// answers that its outcome is unknown.
	CallContext func(ctx context.Context, addr, method string, args, reply any) error
	CallTimeout time.Duration
	// Sleep waits d or until stop closes (tests inject it); it returns false
	// when stopped.
	Sleep func(d time.Duration) bool
}

// Manager is the client's list of servers. The zero value is not usable;
// build one with New.
type Manager struct {
	cfg Config

	mu sync.Mutex
	// list is the order servers are tried in; list[0] is the current one.
	list []string

	stopCh   chan struct{}
	stopOnce sync.Once
}

// New builds a manager over cfg.Servers, shuffled.
func New(cfg Config) *Manager {
	if cfg.Hold <= 0 {
		cfg.Hold = DefaultHold
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = DefaultBackoffMin
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		cfg.BackoffMax = max(DefaultBackoffMax, cfg.BackoffMin)
	}
	m := &Manager{cfg: cfg, stopCh: make(chan struct{})}
	m.list = shuffled(dedupe(cfg.Servers))
	return m
}

// Stop ends every retry in progress (agent shutdown).
func (m *Manager) Stop() { m.stopOnce.Do(func() { close(m.stopCh) }) }

// Servers returns the known servers, the current one first.
func (m *Manager) Servers() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.list...)
}

// SetServers replaces the list (learned from the servers, or PUT by an
// operator). The same set of servers changes nothing: every heartbeat
// answer names them, and the client keeps its server. A different set is
// shuffled anew, so clients that all started with one configured address
// spread over every server they learn, and a server that joins takes its
// share. An empty list is ignored: a client never forgets every server.
func (m *Manager) SetServers(addrs []string) {
	addrs = dedupe(addrs)
	if len(addrs) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if sameSet(m.list, addrs) {
		return
	}
	m.list = shuffled(addrs)
}

// Current is the server calls go to first ("" when none is known).
func (m *Manager) Current() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.list) == 0 {
		return ""
	}
	return m.list[0]
}

// NotifyFailed moves addr to the back of the list when it is the current
// server, so the next call starts with another one.
func (m *Manager) NotifyFailed(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.list) < 2 || m.list[0] != addr {
		return
	}
	m.list = append(m.list[1:], addr)
}

// Call makes one RPC, trying the current server first, then every other
// known server; while none answers it waits a jittered, doubling delay and
// tries them all again, until the hold time is spent. An endpoint's error
// is returned at once, except "No cluster leader" (that server cannot reach
// a leader, another may): the call then goes on to the next server once.
// Only failures that prove a write never reached the log are retried:
// "No cluster leader" and a connection that could not be made. A write
// whose outcome is unknown ("leadership lost while committing log", a
// connection lost after the call was sent) is answered with that error:
// sending it again could register a job twice. Reads are retried on any
// transport failure.
func (m *Manager) Call(method string, args, reply any) error {
	deadline := time.Now().Add(m.cfg.Hold)
	backoff := m.cfg.BackoffMin
	for {
		list := m.Servers()
		if len(list) == 0 {
			return ErrNoServers
		}
		// noLeader is a reachable server's "No cluster leader": the
		// answer when no server does better, whatever was tried after it
		// (a dead server's connection error would hide that one answered).
		var lastErr, noLeader error
		for _, addr := range list {
			err := m.call(addr, method, args, reply)
			if err == nil {
				return nil
			}
			if m.cfg.IsServerError(err) {
				if !isNoLeader(err) {
					return err
				}
				// That server already waited for a leader: do not wait
				// again, only ask the others.
				noLeader = err
			}
			if cerr := structs.RequestContext(args).Err(); cerr != nil {
				return cerr // the caller went away (an HTTP client that disconnected)
			}
			m.NotifyFailed(addr)
			lastErr = err
			if !m.cfg.IsServerError(err) && !m.notSent(err) && !structs.IsReadRequest(args) {
				return structs.NewErrOutcomeUnknown("%s: no answer from server %s after the call was sent (%v)", method, addr, err)
			}
		}
		if noLeader != nil {
			return noLeader
		}
		wait := jitter(backoff)
		if time.Now().Add(wait).After(deadline) {
			return lastErr
		}
		if !m.sleep(wait) {
			return lastErr
		}
		backoff = min(backoff*2, m.cfg.BackoffMax)
	}
}

// call makes one call to addr, with its deadline when CallContext is set.
func (m *Manager) call(addr, method string, args, reply any) error {
	if m.cfg.CallContext == nil {
		return m.cfg.Call(addr, method, args, reply)
	}
	timeout := m.cfg.CallTimeout
	if w, ok := args.(structs.ServerWait); ok {
		if d := w.ServerWait(); d > 0 {
			timeout += d + d/16
		}
	}
	ctx, cancel := context.WithTimeout(structs.RequestContext(args), timeout)
	defer cancel()
	return m.cfg.CallContext(ctx, addr, method, args, reply)
}

func (m *Manager) notSent(err error) bool {
	return m.cfg.IsNotSent != nil && m.cfg.IsNotSent(err)
}

func (m *Manager) sleep(d time.Duration) bool {
	if m.cfg.Sleep != nil {
		return m.cfg.Sleep(d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-m.stopCh:
		return false
	}
}

// Jitter returns d plus up to half of d at random, so clients that lost
// their server together do not come back in lockstep.
func Jitter(d time.Duration) time.Duration { return jitter(d) }

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d + rand.N(d/2+1)
}

func isNoLeader(err error) bool { return structs.IsNoLeader(err) }

func dedupe(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := make([]string, 0, len(in))
	for _, a := range in {
		a = strings.TrimSpace(a)
		if a == "" || seen[a] {
			continue
		}
		seen[a] = true
		out = append(out, a)
	}
	return out
}

func shuffled(in []string) []string {
	out := append([]string(nil), in...)
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	set := make(map[string]bool, len(a))
	for _, x := range a {
		set[x] = true
	}
	for _, x := range b {
		if !set[x] {
			return false
		}
	}
	return true
}
