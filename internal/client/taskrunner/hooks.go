package taskrunner

import "github.com/drover-project/drover/internal/structs"

// LogCollector is the part of logs.Collector the runner uses: paths the
// driver writes the task's output to, and Close when the task is done.
type LogCollector interface {
	StdoutPath() string
	StderrPath() string
	Close() error
}

// StartLogsFunc starts log collection for a task (logs.StartCollector).
type StartLogsFunc func(logDir, task string, maxFiles, maxSizeMB int) (LogCollector, error)

// EnvInput is what an environment builder needs.
type EnvInput struct {
	Alloc    *structs.Allocation
	Task     *structs.Task
	Node     *structs.Node
	Region   string
	AllocDir string
	TaskDir  string
}

// BuildEnvFunc builds a task's environment (taskenv.Build).
type BuildEnvFunc func(in EnvInput) map[string]string

// InterpolateConfigFunc interpolates ${...} in a driver config against the
// task environment and node (taskenv.InterpolateConfig).
type InterpolateConfigFunc func(cfg map[string]any, in EnvInput, env map[string]string) map[string]any

// ReserveDevicesFunc asks the device plugins to prepare the instances
// granted to a task; it returns the environment the task needs to see them.
type ReserveDevicesFunc func(granted []*structs.AllocatedDeviceResource) (map[string]string, error)

// defaultEnv is used when no builder is wired: the task's own env only.
func defaultEnv(in EnvInput) map[string]string {
	env := map[string]string{}
	for k, v := range in.Task.Env {
		env[k] = v
	}
	return env
}
