package client

import (
	"github.com/drover-project/drover/internal/client/allocrunner"
	"github.com/drover-project/drover/internal/client/taskrunner"
)

// The allocation directory, log collection and task environment packages
// are wired here. Nil means the runner's fallback (paths only, no log
// collection, the task's own env, no interpolation).
var (
	newAllocDir       func(allocRoot, allocID string) allocrunner.AllocDir
	startLogs         taskrunner.StartLogsFunc
	buildEnv          taskrunner.BuildEnvFunc
	interpolateConfig taskrunner.InterpolateConfigFunc
)
