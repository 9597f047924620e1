package integration

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The operator's backup path on a dev agent: `operator snapshot save`
// writes an archive the official client checks by its digest, `inspect`
// describes it offline, and `restore` brings the state back: a job
// registered after the save is gone, the saved one is there, and the
// cluster keeps scheduling.
func TestOperatorSnapshotSaveInspectRestore(t *testing.T) {
	a := devAgent(t)
	dir := t.TempDir()
	if _, _, err := a.client.Jobs().Register(rawExecJob("kept", "batch", 1, "exit 0"), nil); err != nil {
		t.Fatal(err)
	}
	out, code := a.cli(dir, "operator", "snapshot", "save", "backup.snap")
	if code != 0 || !regexp.MustCompile(`State file written to backup.snap \(index \d+\)`).MatchString(out) {
		t.Fatalf("save (%d):\n%s", code, out)
	}

	out, code = a.cli(dir, "operator", "snapshot", "inspect", "backup.snap")
	if code != 0 || !regexp.MustCompile(`Index\s+= [1-9]\d*`).MatchString(out) || !regexp.MustCompile(`Term\s+= [1-9]`).MatchString(out) ||
		!regexp.MustCompile(`Jobs\s+1\b`).MatchString(out) || !regexp.MustCompile(`Nodes\s+1\b`).MatchString(out) {
		t.Fatalf("inspect (%d):\n%s", code, out)
	}
	// inspect refuses a damaged file, saying so.
	raw, err := os.ReadFile(filepath.Join(dir, "backup.snap"))
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), raw...)
	bad[len(bad)/2] ^= 0xff
	os.WriteFile(filepath.Join(dir, "bad.snap"), bad, 0o600)
	if out, code := a.cli(dir, "operator", "snapshot", "inspect", "bad.snap"); code == 0 || !strings.Contains(out, "Error reading snapshot") {
		t.Fatalf("inspect of a damaged file (%d):\n%s", code, out)
	}
	// The official client's reader checks the Digest header.
	rc, err := a.client.Operator().Snapshot(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, rc); err != nil {
		t.Fatalf("api snapshot stream: %v", err)
	}
	rc.Close()

	if _, _, err := a.client.Jobs().Register(rawExecJob("dropped", "batch", 1, "exit 0"), nil); err != nil {
		t.Fatal(err)
	}
	if out, code := a.cli(dir, "operator", "snapshot", "restore", "bad.snap"); code == 0 || !strings.Contains(out, "400") {
		t.Fatalf("restore of a damaged file (%d):\n%s", code, out)
	}
	out, code = a.cli(dir, "operator", "snapshot", "restore", "backup.snap")
	if code != 0 || !strings.Contains(out, "Snapshot Restored") {
		t.Fatalf("restore (%d):\n%s", code, out)
	}
	if _, _, err := a.client.Jobs().Info("dropped", nil); err == nil {
		t.Fatal("a job registered after the snapshot survived its restore")
	}
	if _, _, err := a.client.Jobs().Info("kept", nil); err != nil {
		t.Fatalf("saved job after restore: %v", err)
	}
	if _, _, err := a.client.Jobs().Register(rawExecJob("after", "batch", 1, "exit 0"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "a job registered after the restore completes", func() bool {
		for _, s := range a.allocsOf("after") {
			if s.ClientStatus == "complete" {
				return true
			}
		}
		return false
	})
}
