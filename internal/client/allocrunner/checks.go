package allocrunner

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/client/state"
	"github.com/drover-project/drover/internal/structs"
)

// Check results, as Nomad reports them.
const (
	CheckPending = "pending"
	CheckSuccess = "success"
	CheckFailure = "failure"

	checkModeHealthiness = "healthiness"
	checkModeReadiness   = "readiness"
)

// checkRunner runs the http and tcp checks of the allocation's running
// nomad-provider services (checkState, one goroutine each) and keeps their
// latest results for /v1/client/allocation/<id>/checks, deployment health
// (health_check = "checks") and check_restart.
type checkRunner struct {
	ar *AllocRunner

	mu     sync.Mutex
	checks map[string]*checkState
	// passingSince is when every healthiness check last became passing
	// (zero while one is not).
	passingSince time.Time
	// restored are the results a restarted client loaded, until their
	// checks start again (checks_persist.go).
	restored map[string]*state.CheckResult

	// persistMu serialises writes; persisted is the last one.
	persistMu sync.Mutex
	persisted map[string]*state.CheckResult
}

type checkState struct {
	id      string
	def     serviceDef
	check   structs.ServiceCheck
	task    string // the task a check_restart restarts ("" for all main tasks)
	address string // host:port probed
	stop    chan struct{}

	// Under checkRunner.mu:
	status    api.AllocCheckStatus
	successes int // consecutive
	failures  int // consecutive
}

func newCheckRunner(ar *AllocRunner) *checkRunner {
	return &checkRunner{ar: ar, checks: map[string]*checkState{}}
}

// checkID identifies one check of one service of one allocation.
func checkID(allocID string, d serviceDef, c *structs.ServiceCheck) string {
	h := sha256.Sum256([]byte(strings.Join([]string{allocID, d.name, d.owner, d.svc.Name, c.Name, c.Type, c.PortLabel, c.Path}, "\x00")))
	return hex.EncodeToString(h[:16])
}

// sync runs exactly the checks of defs (the running services). A restored
// result whose check the allocation's job no longer defines (removed by
// an update while the client was down) is dropped: it would never run
// again to replace it.
func (cr *checkRunner) sync(a *structs.Allocation, defs []serviceDef) {
	want := cr.checkStates(a, defs)
	defined := cr.checkStates(a, nomadServices(a))
	cr.mu.Lock()
	defer cr.mu.Unlock()
	for id := range cr.restored {
		if _, ok := defined[id]; !ok {
			delete(cr.restored, id)
		}
	}
	for id, st := range cr.checks {
		if w, ok := want[id]; !ok || w.address != st.address {
			close(st.stop)
			delete(cr.checks, id)
		}
	}
	for id, st := range want {
		if _, ok := cr.checks[id]; ok {
			continue
		}
		st.stop = make(chan struct{})
		cr.takeRestoredLocked(st)
		cr.checks[id] = st
		go cr.run(st)
	}
	if len(defs) > 0 {
		cr.restored = nil // the checks that run again took theirs
	}
	cr.updatePassingLocked()
}

// checkStates are the checks of defs by check ID, pending.
func (cr *checkRunner) checkStates(a *structs.Allocation, defs []serviceDef) map[string]*checkState {
	want := map[string]*checkState{}
	for _, d := range defs {
		svcName := registration(a, cr.ar.cfg.Node, cr.ar.cfg.Region, d).ServiceName
		for i := range d.svc.Checks {
			c := d.svc.Checks[i]
			if c.Type != "http" && c.Type != "tcp" {
				continue
			}
			if c.Name == "" {
				c.Name = fmt.Sprintf("service: %q check", svcName)
			}
			portLabel, mode := d.svc.PortLabel, d.svc.AddressMode
			if c.PortLabel != "" {
				portLabel = c.PortLabel
			}
			if c.AddressMode != "" {
				mode = c.AddressMode
			}
			host, port := serviceAddress(a, cr.ar.cfg.Node, portLabel, mode, "")
			if mode == "" || mode == "auto" || mode == "host" {
				host, port = serviceAddress(a, cr.ar.cfg.Node, portLabel, "host", "")
			}
			task := c.TaskName
			if task == "" {
				task = d.task
			}
			id := checkID(a.ID, d, &c)
			cmode := checkModeHealthiness
			if c.OnUpdate == "ignore" {
				cmode = checkModeReadiness
			}
			st := &checkState{id: id, def: d, check: c, task: task, address: hostPort(host, port)}
			st.status = api.AllocCheckStatus{ID: id, Check: c.Name, Group: a.TaskGroup, Mode: cmode,
				Service: svcName, Task: d.task, Status: CheckPending}
			want[id] = st
		}
	}
	return want
}

func (cr *checkRunner) stopAll() {
	cr.mu.Lock()
	for id, st := range cr.checks {
		close(st.stop)
		delete(cr.checks, id)
	}
	cr.restored = nil
	cr.passingSince = time.Time{}
	cr.mu.Unlock()
	cr.persist() // a detached runner keeps what is stored
}

// Statuses returns every check's latest result by check ID: a restored
// result stands until its check runs again.
func (cr *checkRunner) Statuses() api.AllocCheckStatuses {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	out := api.AllocCheckStatuses{}
	for id, r := range cr.restored {
		if r != nil {
			out[id] = r.Status
		}
	}
	for id, st := range cr.checks {
		out[id] = st.status
	}
	return out
}

// gate reports whether the allocation has healthiness checks, and since
// when all of them pass (zero: not all do).
func (cr *checkRunner) gate() (has bool, since time.Time) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	for _, st := range cr.checks {
		if st.status.Mode == checkModeHealthiness {
			has = true
		}
	}
	return has, cr.passingSince
}

// expectsChecks reports whether the allocation's group has any check the
// client runs (health_check "checks" must then wait for them even before
// their tasks run).
func expectsChecks(a *structs.Allocation) bool {
	for _, d := range nomadServices(a) {
		for _, c := range d.svc.Checks {
			if (c.Type == "http" || c.Type == "tcp") && c.OnUpdate != "ignore" {
				return true
			}
		}
	}
	return false
}

func (cr *checkRunner) updatePassingLocked() {
	all, any := true, false
	for _, st := range cr.checks {
		if st.status.Mode != checkModeHealthiness {
			continue
		}
		any = true
		if st.status.Status != CheckSuccess {
			all = false
		}
	}
	switch {
	case !any || !all:
		cr.passingSince = time.Time{}
	case cr.passingSince.IsZero():
		cr.passingSince = cr.ar.cfg.Clock()
	}
}

// run probes one check every interval until stopped.
func (cr *checkRunner) run(st *checkState) {
	interval := st.check.Interval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-st.stop:
			return
		case <-timer.C:
		}
		ok, code, output := probe(st)
		select {
		case <-st.stop:
			return
		default:
		}
		cr.record(st, ok, code, output)
		timer.Reset(interval)
	}
}

// record applies one probe's outcome: success_before_passing and
// failures_before_critical hold the status until that many consecutive
// results agree; check_restart restarts the task after `limit`
// consecutive failures outside the grace period. The new result is stored
// before it is shown (checks_persist.go).
func (cr *checkRunner) record(st *checkState, ok bool, code int, output string) {
	cr.persistMu.Lock()
	cr.mu.Lock()
	next := checkResult{status: st.status, successes: st.successes, failures: st.failures}
	if ok {
		next.successes++
		next.failures = 0
		if next.successes >= max(st.check.SuccessBeforePassing, 1) {
			next.status.Status = CheckSuccess
		}
	} else {
		next.failures++
		next.successes = 0
		if next.failures >= max(st.check.FailuresBeforeCritical, 1) {
			next.status.Status = CheckFailure
		}
	}
	next.status.StatusCode, next.status.Output = code, output
	next.status.Timestamp = cr.ar.cfg.Clock().Unix()
	// A check stopped meanwhile leaves what is stored alone.
	var out map[string]*state.CheckResult
	if cr.checks[st.id] == st {
		out = cr.toStoreLocked(st, next)
	}
	cr.mu.Unlock()
	if out != nil {
		cr.storeLocked(out)
	}
	cr.mu.Lock()
	st.status, st.successes, st.failures = next.status, next.successes, next.failures
	cr.updatePassingLocked()
	cr.mu.Unlock()
	cr.persistMu.Unlock()
	cr.ar.health.taskChanged()
	if !ok {
		cr.maybeRestart(st, next.failures)
	}
}

// maybeRestart restarts the check's task once its failures reach the
// check_restart limit, outside the grace period after the task started.
func (cr *checkRunner) maybeRestart(st *checkState, failures int) {
	rs := st.check.CheckRestart
	if rs == nil {
		rs = st.def.svc.CheckRestart
	}
	if rs == nil || rs.Limit <= 0 || failures < rs.Limit {
		return
	}
	grace := time.Duration(0)
	if rs.Grace != nil {
		grace = *rs.Grace
	}
	now := cr.ar.cfg.Clock()
	restarted := false
	for _, e := range cr.ar.tasks {
		name := e.tr.Task().Name
		if (st.task != "" && name != st.task) || (st.task == "" && e.phase != phaseMain) {
			continue
		}
		ts := e.tr.State()
		if ts.State != structs.TaskStateRunning || now.Before(ts.StartedAt.Add(grace)) {
			continue
		}
		reason := fmt.Sprintf("healthcheck: check %q unhealthy", st.check.Name)
		if err := e.tr.Restart(reason, 0); err == nil {
			restarted = true
		}
	}
	if restarted {
		cr.mu.Lock()
		st.failures, st.successes = 0, 0
		cr.mu.Unlock()
	}
}

// probe runs one http or tcp check against its address.
func probe(st *checkState) (ok bool, code int, output string) {
	timeout := st.check.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case <-st.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if st.check.Type == "tcp" {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", st.address)
		if err != nil {
			return false, 0, "nomad: " + err.Error()
		}
		_ = c.Close()
		return true, 0, "nomad: tcp ok"
	}
	scheme := st.check.Protocol
	if scheme == "" {
		scheme = "http"
	}
	path := st.check.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	method := st.check.Method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if st.check.Body != "" {
		body = strings.NewReader(st.check.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, scheme+"://"+st.address+path, body)
	if err != nil {
		return false, 0, "nomad: " + err.Error()
	}
	keys := make([]string, 0, len(st.check.Header))
	for k := range st.check.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range st.check.Header[k] {
			req.Header.Add(k, v)
		}
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: st.check.TLSSkipVerify, ServerName: st.check.TLSServerName}, //nolint:gosec // the job asks for it
		DisableKeepAlives: true,
	}}
	resp, err := client.Do(req)
	if err != nil {
		return false, 0, "nomad: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	out := strings.TrimSpace(string(b))
	if out == "" {
		out = "nomad: http " + resp.Status
	}
	return resp.StatusCode >= 200 && resp.StatusCode < 300, resp.StatusCode, out
}
