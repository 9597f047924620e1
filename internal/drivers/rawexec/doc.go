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
// The driver must never talk to servers, touch allocation state, set
// resource limits (raw_exec does not isolate), or leak the agent's own
// environment into a task: the task gets exactly TaskConfig.Env.
package rawexec
