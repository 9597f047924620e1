//go:build cgo

package isolate

/*
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

// drover_enter runs before the Go runtime starts (a single-threaded
// process can join a mount namespace; a Go program never is one). It acts
// only for "<binary> __drover_isolate_enter <cmd> <args>..." with the
// _DROVER_ENTER_* variables set: it joins the task's cgroups, its IPC, UTS,
// PID and mount namespaces and its root, forks (a PID namespace takes
// effect for children), drops the bounding capabilities outside the task's
// set, switches to the task's user and execs the command. The parent waits
// and exits as the command did.
static void drover_enter_fail(const char *what) {
	fprintf(stderr, "drover: cannot enter the task: %s: %s\n", what, strerror(errno));
	_exit(126);
}

__attribute__((constructor)) static void drover_enter(int argc, char **argv, char **envp) {
	(void)envp;
	if (argc < 3 || strcmp(argv[1], "__drover_isolate_enter") != 0) return;
	const char *pid = getenv("_DROVER_ENTER_PID");
	if (pid == NULL) return; // the nsenter form, handled in Go
	const char *nsl = getenv("_DROVER_ENTER_NS");
	const char *cgs = getenv("_DROVER_ENTER_CGROUPS");
	const char *uid = getenv("_DROVER_ENTER_UID");
	const char *gid = getenv("_DROVER_ENTER_GID");
	const char *caps = getenv("_DROVER_ENTER_CAPS");
	if (nsl == NULL || uid == NULL || gid == NULL || caps == NULL) {
		errno = EINVAL;
		drover_enter_fail("incomplete request");
	}
	char path[4096];
	if (cgs != NULL && *cgs) {
		char *list = strdup(cgs);
		for (char *dir = strtok(list, ":"); dir != NULL; dir = strtok(NULL, ":")) {
			snprintf(path, sizeof path, "%s/cgroup.procs", dir);
			int fd = open(path, O_WRONLY | O_CLOEXEC);
			if (fd < 0 || write(fd, "0", 1) != 1) drover_enter_fail(path);
			close(fd);
		}
		free(list);
	}
	// Every handle is opened before any is joined: after the mount
	// namespace changes, /proc is the task's.
	const char *names[] = {"ipc", "uts", "pid", "mnt"};
	int fds[4] = {-1, -1, -1, -1};
	int join_pid = 0;
	for (int i = 0; i < 4; i++) {
		char want[8];
		snprintf(want, sizeof want, ",%s,", names[i]);
		char have[64];
		snprintf(have, sizeof have, ",%s,", nsl);
		if (strstr(have, want) == NULL) continue;
		snprintf(path, sizeof path, "/proc/%s/ns/%s", pid, names[i]);
		if ((fds[i] = open(path, O_RDONLY | O_CLOEXEC)) < 0) drover_enter_fail(path);
		if (i == 2) join_pid = 1;
	}
	snprintf(path, sizeof path, "/proc/%s/root", pid);
	int root = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) drover_enter_fail(path);
	for (int i = 0; i < 4; i++) {
		if (fds[i] >= 0 && setns(fds[i], 0) < 0) drover_enter_fail(names[i]);
	}
	if (fchdir(root) < 0 || chroot(".") < 0 || chdir("/") < 0) drover_enter_fail("enter the task's root");
	if (join_pid) {
		pid_t child = fork();
		if (child < 0) drover_enter_fail("fork");
		if (child > 0) {
			signal(SIGINT, SIG_IGN);
			signal(SIGQUIT, SIG_IGN);
			int st;
			while (waitpid(child, &st, 0) < 0) {
				if (errno != EINTR) drover_enter_fail("wait");
			}
			if (WIFSIGNALED(st)) _exit(128 + WTERMSIG(st));
			_exit(WEXITSTATUS(st));
		}
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	}
	uint64_t keep = strtoull(caps, NULL, 16);
	for (int c = 0; c < 64; c++) {
		if (keep & (1ULL << c)) continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
			if (errno == EINVAL) break; // past the kernel's last capability
			drover_enter_fail("drop a capability");
		}
	}
	if (setgroups(0, NULL) < 0 || setgid((gid_t)atoi(gid)) < 0 || setuid((uid_t)atoi(uid)) < 0) drover_enter_fail("switch to the task's user");
	unsetenv("_DROVER_ENTER_PID");
	unsetenv("_DROVER_ENTER_NS");
	unsetenv("_DROVER_ENTER_CGROUPS");
	unsetenv("_DROVER_ENTER_UID");
	unsetenv("_DROVER_ENTER_GID");
	unsetenv("_DROVER_ENTER_CAPS");
	execvp(argv[2], &argv[2]);
	fprintf(stderr, "drover: exec %s: %s\n", argv[2], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}
*/
import "C"

// enterInC: this binary joins a task's namespaces itself, before its Go
// runtime starts (see the C code above).
const enterInC = true
