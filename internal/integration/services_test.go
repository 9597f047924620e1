package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// The test binary doubles as the task's HTTP server: run with
// DROVER_IT_HTTP set it serves on $NOMAD_PORT_http, answering 200 unless
// the file $DROVER_IT_FAIL exists (then 500).
func init() {
	if os.Getenv("DROVER_IT_HTTP") == "" {
		return
	}
	flag := os.Getenv("DROVER_IT_FAIL")
	ln, err := net.Listen("tcp", net.JoinHostPort(os.Getenv("NOMAD_IP_http"), os.Getenv("NOMAD_PORT_http")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := os.Stat(flag); err == nil {
			http.Error(w, "failing on purpose", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	os.Exit(0)
}

// nomadServiceJob runs the test binary as an HTTP server with a nomad service,
// an http check with check_restart, and a deployment judged by checks.
func nomadServiceJob(t *testing.T, id, failFlag string) *api.Job {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	job := api.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"*"}
	tg := api.NewTaskGroup("g", 1)
	tg.Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "http"}}}}
	tg.Update = &api.UpdateStrategy{HealthCheck: ptr("checks"), MinHealthyTime: ptr(500 * time.Millisecond),
		HealthyDeadline: ptr(2 * time.Minute), ProgressDeadline: ptr(3 * time.Minute)}
	tg.Services = []*api.Service{{
		Name: "web-svc", Provider: "nomad", PortLabel: "http", Tags: []string{"a", "b"},
		Checks: []api.ServiceCheck{{
			Name: "alive", Type: "http", Path: "/health", Interval: 200 * time.Millisecond, Timeout: time.Second,
			CheckRestart: &api.CheckRestart{Limit: 3, Grace: ptr(time.Second)},
		}},
	}}
	task := api.NewTask("t", "raw_exec")
	task.Config = map[string]any{"command": self}
	task.Env = map[string]string{"DROVER_IT_HTTP": "1", "DROVER_IT_FAIL": failFlag}
	task.Resources = &api.Resources{CPU: ptr(20), MemoryMB: ptr(32)}
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	return job
}

// A raw_exec task serving HTTP with a nomad service and an http check: the
// deployment waits for the check, the service is listed with the
// allocation's address and port, a failing check restarts the task
// (check_restart) without removing the registration, stopping the job
// removes it, and the event stream shows both.
func TestNomadServiceRegistrationAndChecks(t *testing.T) {
	a := devAgent(t)
	flag := filepath.Join(t.TempDir(), "fail")
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	// Service events from the start.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evCh, err := a.client.EventStream().Stream(ctx, map[api.Topic][]string{api.Topic("Service"): {"*"}}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var evMu sync.Mutex
	evTypes := map[string]int{}
	go func() {
		for evs := range evCh {
			evMu.Lock()
			for _, e := range evs.Events {
				if e.Topic == "Service" {
					evTypes[e.Type]++
				}
			}
			evMu.Unlock()
		}
	}()

	if _, _, err := a.client.Jobs().Register(nomadServiceJob(t, "svc", flag), nil); err != nil {
		t.Fatal(err)
	}
	var allocID string
	waitFor(t, 30*time.Second, "the allocation to run", func() bool {
		for _, s := range a.allocsOf("svc") {
			if s.ClientStatus == "running" {
				allocID = s.ID
				return true
			}
		}
		return false
	})
	alloc, _, err := a.client.Allocations().Info(allocID, nil)
	if err != nil {
		t.Fatal(err)
	}
	port := alloc.AllocatedResources.Shared.Ports[0]

	// Registered with the allocation's address and port while the check fails.
	var regs []*api.ServiceRegistration
	waitFor(t, 30*time.Second, "the service registration", func() bool {
		regs, _, err = a.client.Services().Get("web-svc", nil)
		return err == nil && len(regs) == 1
	})
	r := regs[0]
	if r.AllocID != allocID || r.Address != port.HostIP || r.Port != port.Value || r.JobID != "svc" ||
		r.Namespace != "default" || r.NodeID != alloc.NodeID || r.Datacenter != "dc1" || strings.Join(r.Tags, ",") != "a,b" {
		t.Fatalf("registration = %+v, want alloc %s at %s:%d", r, allocID, port.HostIP, port.Value)
	}
	if js, _, err := a.client.Jobs().Services("svc", nil); err != nil || len(js) != 1 || js[0].ID != r.ID {
		t.Fatalf("job services: %+v %v", js, err)
	}
	if as, _, err := a.client.Allocations().Services(allocID, nil); err != nil || len(as) != 1 || as[0].ID != r.ID {
		t.Fatalf("alloc services: %+v %v", as, err)
	}
	if _, _, err := a.client.Jobs().Services("nope", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("services of an unknown job: %v", err)
	}
	list, _, err := a.client.Services().List(nil)
	if err != nil || len(list) != 1 || list[0].Namespace != "default" || len(list[0].Services) != 1 ||
		list[0].Services[0].ServiceName != "web-svc" {
		t.Fatalf("services list = %+v %v", list, err)
	}

	// The check fails and the deployment is not healthy, past min_healthy_time.
	waitFor(t, 30*time.Second, "the check to fail", func() bool {
		cs, err := a.client.Allocations().Checks(allocID, nil)
		for _, c := range cs {
			return err == nil && c.Status == "failure" && c.StatusCode == 500 && c.Check == "alive" && c.Service == "web-svc"
		}
		return false
	})
	if cur, _, _ := a.client.Allocations().Info(allocID, nil); cur.DeploymentStatus != nil && cur.DeploymentStatus.Healthy != nil {
		t.Fatalf("allocation judged while its check fails: %+v", cur.DeploymentStatus)
	}
	// check_restart: three failures after the grace restart the task, and
	// the registration stays.
	waitFor(t, 20*time.Second, "check_restart to restart the task", func() bool {
		cur, _, err := a.client.Allocations().Info(allocID, nil)
		if err != nil || cur.TaskStates["t"] == nil || cur.TaskStates["t"].Restarts == 0 {
			return false
		}
		for _, e := range cur.TaskStates["t"].Events {
			if e.Type == "Restart Signaled" && strings.Contains(e.DisplayMessage+e.RestartReason, "healthcheck") {
				return true
			}
		}
		return false
	})
	if regs, _, _ := a.client.Services().Get("web-svc", nil); len(regs) != 1 {
		t.Fatalf("a failing check removed the registration: %+v", regs)
	}

	// The check passes: the deployment succeeds.
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the check to pass", func() bool {
		cs, err := a.client.Allocations().Checks(allocID, nil)
		for _, c := range cs {
			return err == nil && c.Status == "success" && c.StatusCode == 200
		}
		return false
	})
	waitDeployment(t, a, "svc", 0, "successful", 30*time.Second)

	// ?choose picks a stable subset.
	var chosen []*api.ServiceRegistration
	if err := getJSON(a.url("/v1/service/web-svc?choose=1|k"), &chosen); err != nil || len(chosen) != 1 || chosen[0].ID != r.ID {
		t.Fatalf("choose: %+v %v", chosen, err)
	}

	// The CLI: list, info, and delete of an unknown registration.
	dir := t.TempDir()
	if out, code := a.cli(dir, "service", "list"); code != 0 || !strings.Contains(out, "web-svc") || !strings.Contains(out, "[a,b]") {
		t.Fatalf("service list: exit %d\n%s", code, out)
	}
	addr := fmt.Sprintf("%s:%d", port.HostIP, port.Value)
	if out, code := a.cli(dir, "service", "info", "web-svc"); code != 0 || !strings.Contains(out, addr) || !strings.Contains(out, "svc") {
		t.Fatalf("service info: exit %d, want %s\n%s", code, addr, out)
	}
	if out, code := a.cli(dir, "alloc", "checks", allocID); code != 0 || !strings.Contains(out, "alive") || !strings.Contains(out, "success") {
		t.Fatalf("alloc checks: exit %d\n%s", code, out)
	}
	if out, code := a.cli(dir, "service", "delete", "web-svc", "nope"); code == 0 || !strings.Contains(out, "404") {
		t.Fatalf("service delete of an unknown ID: exit %d\n%s", code, out)
	}

	// Stopping the job removes the registration.
	if _, _, err := a.client.Jobs().Deregister("svc", false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the registration to go", func() bool {
		regs, _, err := a.client.Services().Get("web-svc", nil)
		return err == nil && len(regs) == 0
	})
	waitFor(t, 30*time.Second, "the service events", func() bool {
		evMu.Lock()
		defer evMu.Unlock()
		return evTypes["ServiceRegistration"] > 0 && evTypes["ServiceDeregistration"] > 0
	})
}

func getJSON(url string, out any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
