package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/drivers/isolate"
)

// A jar compiled here runs under the java driver on a dev agent, isolated
// like exec: the client's chroot_env shows the jar's directory at /jars,
// the jar prints its arguments and environment, and the task completes.
// The node carries the JVM's version attributes.
func TestJavaDriverRunsJarOnDevAgent(t *testing.T) {
	for _, tool := range []string{"javac", "jar"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true but %s is missing (.ci/run installs default-jdk-headless)", tool)
			}
			t.Skipf("%s not found", tool)
		}
	}
	jars := t.TempDir()
	if err := os.Chmod(jars, 0o755); err != nil {
		t.Fatal(err)
	}
	src := `public class Hello { public static void main(String[] a) {
  System.out.println("args=" + String.join(",", a));
  System.getenv().forEach((k, v) -> System.out.println(k + "=" + v)); } }`
	if err := os.WriteFile(filepath.Join(jars, "Hello.java"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{{"javac", "Hello.java"}, {"jar", "cfe", "hello.jar", "Hello", "Hello.class"}} {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Dir = jars
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, out)
		}
	}
	chroot := isolate.DefaultChrootEnv()
	chroot[jars] = "/jars"
	a := startAgent(t, "", []string{"-dev"}, map[string]any{"client": map[string]any{"chroot_env": chroot}})
	a.waitReady(true)
	requireExecDriver(t, a, "java")
	nodes, _, _ := a.client.Nodes().List(nil)
	n, _, err := a.client.Nodes().Info(nodes[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"driver.java.version", "driver.java.runtime", "driver.java.vm"} {
		if n.Attributes[k] == "" {
			t.Errorf("node lacks attribute %s", k)
		}
	}

	job := api.NewBatchJob("jv", "jv", "global", 50)
	job.Datacenters = []string{"*"}
	tg := api.NewTaskGroup("g", 1)
	task := api.NewTask("t", "java")
	task.Config = map[string]any{"jar_path": "/jars/hello.jar", "jvm_options": []string{"-Xmx32m"}, "args": []string{"x", "y"}}
	task.Env = map[string]string{"GREETING": "from-drover"}
	task.Resources = &api.Resources{CPU: ptr(500), MemoryMB: ptr(256)}
	tg.AddTask(task)
	tg.RestartPolicy = &api.RestartPolicy{Attempts: ptr(0), Mode: ptr("fail"), Interval: ptr(time.Hour), Delay: ptr(time.Second)}
	tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: ptr(0), Unlimited: ptr(false)}
	job.AddTaskGroup(tg)
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var s *api.AllocationListStub
	waitFor(t, 60*time.Second, "the java task done", func() bool {
		l := a.allocsOf("jv")
		if len(l) == 1 && (l[0].ClientStatus == "complete" || l[0].ClientStatus == "failed") {
			s = l[0]
		}
		return s != nil
	})
	out := a.catLog(s.ID, "t", "stdout")
	if s.ClientStatus != "complete" {
		t.Fatalf("java task %s:\nstdout: %s\nstderr: %s", s.ClientStatus, out, a.catLog(s.ID, "t", "stderr"))
	}
	for _, want := range []string{"args=x,y\n", "GREETING=from-drover\n", "NOMAD_TASK_DIR=/local\n", "NOMAD_ALLOC_ID=" + s.ID + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the jar's output lacks %q:\n%s", want, out)
		}
	}
}
