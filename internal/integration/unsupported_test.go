package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

const serviceJob = `job "websvc" {
  datacenters = ["*"]

  group "web" {
    network {
      port "http" {}
    }

    service {
      name     = "websvc"
      provider = "consul"
      port     = "http"
    }

    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "exec sleep 600"]
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
  }
}
`

// A job using a block Drover does not act on is never silently run without
// it: a template calling a Consul function is refused with a 400 naming it,
// its task and the function, through the
// API and the CLI; a service is accepted, and `job run` prints the warning.
func TestUnsupportedBlocksRefusedOrWarned(t *testing.T) {
	a := devAgent(t)
	dir := t.TempDir()

	// The API: a template calling Consul is refused, naming the block,
	// its path and the function.
	job := rawExecJob("tmpl", "service", 1, "exec sleep 600")
	job.TaskGroups[0].Tasks[0].Templates = []*api.Template{{EmbeddedTmpl: ptr("addr={{ key \"app/addr\" }}"), DestPath: ptr("local/app.conf")}}
	_, _, err := a.client.Jobs().Register(job, nil)
	want := `Task group "g", task "t": template "local/app.conf" function "key" (Consul) is not supported by Drover yet`
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), want) {
		t.Fatalf("register with a template: want a 400 containing %q, got %v", want, err)
	}
	if _, _, err := a.client.Jobs().Info("tmpl", nil); err == nil {
		t.Fatal("the refused job was registered anyway")
	}
	// The same from the CLI: validate and run fail and name it.
	tmplSpec := strings.Replace(strings.Replace(serviceJob, `"websvc"`, `"tmpl"`, 1), `      resources {`, `      template {
        data        = "{{ range service \"db\" }}{{ .Address }}{{ end }}"
        destination = "local/app.conf"
      }
      resources {`, 1)
	if err := os.WriteFile(filepath.Join(dir, "tmpl.nomad.hcl"), []byte(tmplSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	want = `Task group "web", task "server": template "local/app.conf" function "service" (Consul) is not supported by Drover yet`
	for _, verb := range []string{"validate", "plan", "run"} {
		out, code := a.cli(dir, "job", verb, "tmpl.nomad.hcl")
		if code == 0 || !strings.Contains(out, want) {
			t.Errorf("job %s with a template: exit %d, want non-zero naming the template\n%s", verb, code, out)
		}
	}

	// raw_exec's options are checked at registration: an option it does
	// not have is refused naming the key and the task.
	bad := rawExecJob("oom", "service", 1, "exec sleep 600")
	bad.TaskGroups[0].Tasks[0].Config["oom_score_adj"] = 500
	_, _, err = a.client.Jobs().Register(bad, nil)
	want = `Task group "g", task "t": driver "raw_exec" config: oom_score_adj is not supported by Drover's raw_exec yet`
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), want) {
		t.Fatalf("register with oom_score_adj: want a 400 containing %q, got %v", want, err)
	}

	// A Consul service is accepted with a warning that `job run` prints
	// (Drover has no Consul integration); the job runs.
	if err := os.WriteFile(filepath.Join(dir, "websvc.nomad.hcl"), []byte(serviceJob), 0o644); err != nil {
		t.Fatal(err)
	}
	warning := `Task group "web": service "websvc" is accepted but not acted on by Drover yet: Drover has no Consul integration, so it is not registered in Consul (provider "consul")`
	// -detach: the test waits for the allocation itself, not for the
	// deployment (10s of min_healthy_time by default).
	out, code := a.cli(dir, "job", "run", "-detach", "websvc.nomad.hcl")
	if code != 0 || !strings.Contains(out, "Job Warnings:\n1 warning:\n\n* "+warning) {
		t.Fatalf("job run with a service: exit %d, want 0 and the warning\n%s", code, out)
	}
	for _, verb := range []string{"validate", "plan"} {
		out, _ := a.cli(dir, "job", verb, "websvc.nomad.hcl")
		if !strings.Contains(out, warning) {
			t.Errorf("job %s with a service: want the warning\n%s", verb, out)
		}
	}
	waitFor(t, 20*time.Second, "the service job's alloc running", func() bool {
		for _, s := range a.allocsOf("websvc") {
			if s.ClientStatus == "running" {
				return true
			}
		}
		return false
	})
}

// `plugin "lxc" {}` names a driver Drover does not have: the agent
// refuses to start and says which plugin and which file.
func TestAgentRefusesUnknownPlugin(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "agent.hcl")
	if err := os.WriteFile(cfg, []byte("plugin \"raw_exec\" {\n  config { enabled = true }\n}\n\nplugin \"lxc\" {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(droverBin, "agent", "-dev", "-config", cfg)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("agent with plugin \"lxc\" kept running:\n%s", out)
	}
	want := cfg + `:5: plugin "lxc" is not a task driver or device plugin built into Drover`
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("want a failed start naming %q, got err %v\n%s", want, err, out)
	}
}
