package isolate

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Cred is a resolved user: uid, primary gid and supplementary groups.
type Cred struct {
	Uid, Gid int
	Groups   []int
}

// LookupUser resolves a user name or numeric "uid[:gid]" from the host's
// /etc/passwd and /etc/group (what the default chroot_env shows the task).
func LookupUser(name string) (*Cred, error) { return lookupUser(name) }

func lookupUser(name string) (*Cred, error) {
	if name == "" {
		name = "root"
	}
	if u, g, ok := strings.Cut(name, ":"); ok || isNumber(name) {
		uid, err := strconv.Atoi(u)
		if err != nil {
			return nil, fmt.Errorf("user %q: not a uid", name)
		}
		gid := uid
		if ok {
			if gid, err = strconv.Atoi(g); err != nil {
				return nil, fmt.Errorf("user %q: not a gid", name)
			}
		}
		return &Cred{Uid: uid, Gid: gid}, nil
	}
	var c *Cred
	err := scan("/etc/passwd", func(f []string) bool {
		if len(f) < 4 || f[0] != name {
			return false
		}
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err1 == nil && err2 == nil {
			c = &Cred{Uid: uid, Gid: gid}
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("look up user %q: %w", name, err)
	}
	if c == nil {
		return nil, fmt.Errorf("user %q does not exist on this client", name)
	}
	_ = scan("/etc/group", func(f []string) bool {
		if len(f) < 4 {
			return false
		}
		for _, m := range strings.Split(f[3], ",") {
			if m == name {
				if gid, err := strconv.Atoi(f[2]); err == nil && gid != c.Gid {
					c.Groups = append(c.Groups, gid)
				}
			}
		}
		return false
	})
	return c, nil
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

func scan(path string, fn func([]string) bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		if fn(strings.Split(line, ":")) {
			return nil
		}
	}
	return sc.Err()
}
