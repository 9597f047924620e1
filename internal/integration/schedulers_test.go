package integration

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Scheduling on an agent is paused and resumed through
// /v1/agent/schedulers/config without a restart: paused, a new job's
// evaluation waits and no worker is listed; resumed with two slots, the
// job is placed and 2 × 16 workers are listed.
func TestSchedulerWorkersPauseAndResume(t *testing.T) {
	a := devAgent(t)
	ag := a.client.Agent()
	info, err := ag.GetSchedulerWorkersInfo(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ag.GetSchedulerWorkerConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Schedulers) != cfg.NumSchedulers*16 || info.ServerID == "" {
		t.Fatalf("%d workers listed for num_schedulers %d (server %q)", len(info.Schedulers), cfg.NumSchedulers, info.ServerID)
	}
	for _, w := range info.Schedulers {
		if w.Status != "Started" || w.ID == "" || w.Started == "" {
			t.Fatalf("worker %+v", w)
		}
	}

	if _, err := ag.SetSchedulerWorkerConfig(api.SchedulerWorkerPoolArgs{NumSchedulers: 0,
		EnabledSchedulers: []string{"service", "batch", "_core"}}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "no workers listed", func() bool {
		info, err := ag.GetSchedulerWorkersInfo(nil)
		return err == nil && len(info.Schedulers) == 0
	})
	resp, _, err := a.client.Jobs().Register(rawExecJob("paused", "service", 1, "sleep 600"), nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		ev, _, err := a.client.Evaluations().Info(resp.EvalID, nil)
		if err != nil || ev.Status != "pending" || len(a.allocsOf("paused")) != 0 {
			t.Fatalf("while paused: eval %+v, err %v, %d allocs", ev, err, len(a.allocsOf("paused")))
		}
		time.Sleep(50 * time.Millisecond)
	}

	if _, err := ag.SetSchedulerWorkerConfig(api.SchedulerWorkerPoolArgs{NumSchedulers: 2,
		EnabledSchedulers: []string{"service", "batch", "_core"}}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the job placed after resuming", func() bool {
		ev, _, err := a.client.Evaluations().Info(resp.EvalID, nil)
		return err == nil && ev.Status == "complete" && len(a.allocsOf("paused")) == 1
	})
	info, err = ag.GetSchedulerWorkersInfo(nil)
	if err != nil || len(info.Schedulers) != 32 {
		t.Fatalf("%d workers after resuming with 2 slots, %v", len(info.Schedulers), err)
	}
	if got := info.Schedulers[0].EnabledSchedulers; len(got) != 3 {
		t.Fatalf("worker enabled schedulers %v", got)
	}
}
