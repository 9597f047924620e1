// Package podman implements the podman task driver: a task runs as a
// container of the local podman API service (`podman system service`, on
// /run/podman/podman.sock when rootful; the operator starts it, as dockerd).
//
// Choice of API, measured on podman 4.3.1: podman's service speaks both its
// libpod API and a Docker-compatible one (reporting Docker API 1.41). The
// docker driver's own engine tests, pointed at podman's socket with no
// change, passed except two engine quirks (a one-shot stats sample has no
// previous sample, so the CPU percent is an average since start; OOM kills
// are not flagged, see below; both handled here). So this driver is the docker driver
// (internal/drivers/docker) run with podman's flavor over the compatible
// API: one implementation of create/start/wait, log streaming into the
// rotated files, recovery after an agent restart, stop with kill_signal and
// kill_timeout, removal, exec, stats and image loading, instead of a second
// client for the libpod API with the same behaviour to keep in step. What
// is podman's own is here: the task `config {}` keys of the upstream
// nomad-driver-podman (mapped onto the docker driver's), the agent's
// `plugin "nomad-driver-podman"` keys, the service socket, the fingerprint
// attributes (driver.podman.version, .rootless, .cgroupVersion), the
// stats sampling (the first sample of a stream, which carries the previous)
// and OOM detection.
//
// OOM: podman 4.3.1 with conmon 2.1.6 never sets State.OOMKilled (also for
// `podman run`): conmon writes its "oom" marker into its working directory,
// where podman does not look. A podman container that ends with exit code
// 137 is therefore checked against the kernel's log (/dev/kmsg), whose
// oom-kill record names the container's memory cgroup (libpod-<id>).
//
// Bridge-mode groups: a podman task joins the allocation's network
// namespace, which the client creates (internal/client/bridgenet), by its
// path: network mode "ns:<path>" on the compatible API (podman's `--network
// ns:<path>`; the upstream driver does the same). Not docker's pause
// container: measured on podman 4.3, a container in "container:<pause>"
// mode makes podman refuse to remove the pause container, even forced,
// while the task's container exists ("has dependent containers"); the path
// also needs no pause image or second conmon per allocation, and podman
// still writes the task's hostname, resolv.conf and hosts file there.
//
// Root without CAP_SYS_RESOURCE (containers here) cannot give a container
// podman's default rlimits (nofile 1048576): every start fails with
// "error setting rlimit type 7". The host fix, documented in the README and
// applied by .ci/run, is /etc/containers/containers.conf
// `default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]`.
//
// It must never talk to the servers or touch allocation state, never run a
// privileged container unless the plugin config allows it, and never leave
// a container behind when the client destroys a task (unless gc.container
// = false).
package podman
