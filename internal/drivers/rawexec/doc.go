// Package rawexec implements the raw_exec task driver: it runs a task's
// command directly on the host, as the agent's user, with no filesystem or
// namespace isolation.
//
// It owns the task's process tree. Every process a task starts is tracked in
// a per-task cgroup so that stopping or destroying the task kills all of
// them, including processes that left the process group (setsid, double
// fork). The tracker is chosen once per driver, in order of preference:
//
//   - a cgroup v2 leaf (<v2 mount>/drover/<alloc>.<task>); the process is
//     cloned directly into it (clone3 with CLONE_INTO_CGROUP) and everything
//     in it is killed with cgroup.kill (or freeze, SIGKILL each, thaw);
//   - a cgroup v1 freezer cgroup (<freezer mount>/drover/<alloc>.<task>); the
//     process is forked from an OS thread that was first moved into the
//     cgroup, so the child is born inside it; killed by freeze/kill/thaw;
//   - no cgroups: the process group only (reported in the fingerprint).
//
// A task with cgroups also gets a cpuset cgroup (the v1 cpuset hierarchy's
// <mount>/drover/<alloc>.<task>, joined the same way as the v1 freezer; on
// a pure v2 host with the cpuset controller, its own cgroup): its reserved
// cores (`resources { cores }`), or else the node's shared cpuset, which
// the client changes while the task runs (UpdateCpuset) so that it stays
// off the cores other tasks reserved. Nomad's raw_exec does the same.
//
// Each task runs under a small supervisor, its shim: this same binary
// re-executed with the hidden first argument ShimCommand (any binary that
// links this package answers to it, from an init function). The shim runs
// in its own session, starts the task as its child (inside the task's
// cgroup), copies the task's stdout and stderr through pipes into the
// rotated log files <alloc>/alloc/logs/<task>.{stdout,stderr}.<n>, and when
// the task exits writes its exit status to exit.json in the task's
// private/rawexec directory. So the task neither dies with the agent (no
// FIFO whose reader disappears, no SIGPIPE), nor loses output while the
// agent is down, and a restarted agent learns the real exit code of a task
// that ended meanwhile (a process that is not our child cannot be waited
// for). The shim, not the agent, is the task's parent; the handle the
// client persists names the shim and the task (pid and start time, so a
// reused pid is never adopted) and their cgroup. The shim is a separate
// process rather than a thread of the agent because it must outlive it;
// it is the same binary rather than a second one so that an installation
// stays one file. It exits once the task has exited and its output is
// drained, or when the driver destroys the task.
//
// The exec and java drivers are built on this one (StartIsolated): the same
// shim creates their task's libcontainer container (package isolate) and
// waits for its init, which is the task's own program; libcontainer
// reports a failure to start before that program runs, so the shim says
// "ok" only once it runs. The shim is the container init's subreaper, so
// the exit status it records is the task's own.
//
// The driver must never talk to servers, touch allocation state, set
// resource limits beyond the cpuset (raw_exec does not isolate), or leak the agent's own
// environment into a task: the task gets exactly TaskConfig.Env.
package rawexec
