package taskrunner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// writeDispatchPayload writes a dispatched job's payload to
// local/<dispatch_payload.file> in the task directory before the task
// starts. Tasks without a dispatch_payload block, or jobs without a
// payload, are left alone.
func (tr *TaskRunner) writeDispatchPayload() error {
	dp := tr.cfg.Task.DispatchPayload
	tr.mu.Lock()
	alloc := tr.alloc
	tr.mu.Unlock()
	if dp == nil || dp.File == "" || alloc == nil || alloc.Job == nil || len(alloc.Job.Payload) == 0 {
		return nil
	}
	local := filepath.Join(tr.cfg.TaskDir, "local")
	dst := filepath.Join(local, filepath.Clean("/"+dp.File))
	if !strings.HasPrefix(dst, local+string(filepath.Separator)) {
		return fmt.Errorf("dispatch_payload file %q escapes the task's local directory", dp.File)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, alloc.Job.Payload, 0o644)
}
