package rawexec

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// taskUser is a task's `user` resolved on this node: the task (and every
// command `alloc exec` runs in it) gets its uid, primary gid and
// supplementary groups, so files it writes are owned by that user.
type taskUser struct {
	Name   string   `json:"name"`
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// geteuid is the agent's effective uid (tests replace it).
var geteuid = os.Geteuid

// resolveUser looks the task's user up. The agent's own user needs nothing
// (nil); another user needs the agent to run as root, and must exist.
func resolveUser(name string) (*taskUser, error) {
	if name == "" {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("task user %q: no such user on this node (%v)", name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("task user %q: uid %q is not numeric", name, u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("task user %q: gid %q is not numeric", name, u.Gid)
	}
	euid := geteuid()
	if uint64(euid) == uid {
		return nil, nil // already that user
	}
	if euid != 0 {
		return nil, fmt.Errorf("task user %q: raw_exec can run a task as another user only when the agent runs as root (it runs as uid %d); remove `user` or run the agent as root", name, euid)
	}
	tu := &taskUser{Name: name, UID: uint32(uid), GID: uint32(gid)}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("task user %q: listing its groups: %v", name, err)
	}
	for _, g := range ids {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			tu.Groups = append(tu.Groups, uint32(n))
		}
	}
	return tu, nil
}

// credential is what a process started as the user runs with (nil: as the
// agent).
func (u *taskUser) credential() *syscall.Credential {
	if u == nil {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
}

// checkReach says which directory on the way to dir the user cannot
// search (nil: it can reach dir). A task run as another user starts in its
// task directory; a data_dir the operator made 0700 failed the start with
// Go's "fork/exec /bin/sh: permission denied", naming the command, not the
// directory.
func (u *taskUser) checkReach(dir string) error {
	if u == nil || u.UID == 0 || dir == "" {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	groups := map[uint32]bool{u.GID: true}
	for _, g := range u.Groups {
		groups[g] = true
	}
	p := "/"
	for _, part := range append([]string{""}, strings.Split(strings.TrimPrefix(abs, "/"), "/")...) {
		p = filepath.Join(p, part)
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			return nil // the start says what is missing
		}
		mode := st.Mode & 0o777
		var ok bool
		switch {
		case st.Uid == u.UID:
			ok = mode&0o100 != 0
		case groups[st.Gid]:
			ok = mode&0o010 != 0
		default:
			ok = mode&0o001 != 0
		}
		if !ok {
			return fmt.Errorf("task user %q cannot reach the task directory %s: %s (mode %04o, owner uid %d, gid %d) is not searchable by it; make it searchable (chmod o+x) or remove `user`",
				u.Name, abs, p, mode, st.Uid, st.Gid)
		}
	}
	return nil
}
