package rawexec

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

func jsonMarshal(v any) ([]byte, error)   { return json.Marshal(v) }
func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// uniqueID makes name unique to this test run: a task ID names
// machine-wide cgroups (and container state), so two runs of this
// package's tests at once (a developer's and CI's) must never share one,
// or one run's start or stop kills the other's processes.
func uniqueID(name string) string {
	return fmt.Sprintf("%d-%d-%s", time.Now().UnixNano(), os.Getpid(), name)
}
