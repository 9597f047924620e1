package getter

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// gitSource is a git artifact: "git::<url>[//subdir][?ref=...&depth=N]",
// or the github.com/gitlab.com/bitbucket.org and git@host:path shorthands.
// It is cloned with the git binary of the client.
type gitSource struct {
	url    string
	ref    string
	depth  int
	subdir string
}

func parseGit(src, s string, options map[string]string) (*source, error) {
	l := strings.ToLower(s)
	for _, host := range []string{"github.com/", "gitlab.com/", "bitbucket.org/"} {
		if strings.HasPrefix(l, host) {
			s = "https://" + s
			break
		}
	}
	raw, q, _ := strings.Cut(s, "?")
	query, err := url.ParseQuery(q)
	if err != nil {
		return nil, fmt.Errorf("source %q has an invalid query: %v", src, err)
	}
	for k, v := range options {
		query.Set(k, v)
	}
	g := &gitSource{ref: query.Get("ref")}
	if d := query.Get("depth"); d != "" {
		if g.depth, err = strconv.Atoi(d); err != nil || g.depth < 0 {
			return nil, fmt.Errorf("source %q: depth %q is not a number of commits", src, d)
		}
	}
	if query.Get("sshkey") != "" {
		return nil, &UnsupportedError{What: "git option", Name: "sshkey",
			Reason: "Drover clones with the client's own git and ssh configuration; give the client agent's user the key"}
	}
	// go-getter's "//" names a subdirectory of the repository.
	rest := raw
	prefix := ""
	if i := strings.Index(raw, "://"); i >= 0 {
		prefix, rest = raw[:i+3], raw[i+3:]
	}
	if i := strings.Index(rest, "//"); i >= 0 {
		g.subdir = rest[i+2:]
		rest = rest[:i]
		if g.subdir != "" && !filepath.IsLocal(g.subdir) {
			return nil, fmt.Errorf("source %q: subdirectory %q leaves the repository", src, g.subdir)
		}
	}
	g.url = prefix + rest
	if g.url == "" || strings.HasPrefix(g.url, "-") {
		return nil, fmt.Errorf("source %q is not a git URL", src)
	}
	if g.ref != "" && strings.HasPrefix(g.ref, "-") {
		return nil, fmt.Errorf("source %q: ref %q is not a git ref", src, g.ref)
	}
	return &source{kind: "git", git: g}, nil
}

// localGitPath is the path a file:// or plain-path git URL reads ("" for
// a remote one).
func localGitPath(u string) string {
	switch {
	case strings.HasPrefix(u, "file://"):
		return strings.TrimPrefix(u, "file://")
	case strings.HasPrefix(u, "/"):
		return u
	}
	return ""
}

// fetchGit clones the repository and moves its tree (or subdir) into dst.
func (f *fetcher) fetchGit(ctx context.Context, g *gitSource, dst string) error {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return errors.New("git is not installed on this client (a git source needs the git binary on the agent's PATH)")
	}
	if p := localGitPath(g.url); p != "" && !f.cfg.DisableFilesystemIsolation {
		if err := f.checkIsolated(p); err != nil {
			return err
		}
	}
	if f.cfg.GitTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.cfg.GitTimeout)
		defer cancel()
	}
	repo := filepath.Join(f.tmp, "repo")
	run := func(dir string, args ...string) error {
		cmd := exec.CommandContext(ctx, gitBin, append([]string{"-c", "protocol.ext.allow=never"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			if ctx.Err() != nil && f.cfg.GitTimeout > 0 {
				return fmt.Errorf("git %s did not finish within the client's artifact git_timeout (%s)", args[0], f.cfg.GitTimeout)
			}
			return fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	args := []string{"clone", "--quiet"}
	if g.depth > 0 {
		args = append(args, "--depth", strconv.Itoa(g.depth))
		if g.ref != "" {
			args = append(args, "--branch", g.ref)
		}
	}
	if err := run(f.tmp, append(args, "--", g.url, repo)...); err != nil {
		return err
	}
	if g.ref != "" && g.depth == 0 {
		if err := run(repo, "checkout", "--quiet", g.ref, "--"); err != nil {
			return err
		}
	}
	from := repo
	if g.subdir != "" {
		from = filepath.Join(repo, g.subdir)
		if st, err := os.Lstat(from); err != nil || !st.IsDir() {
			return fmt.Errorf("the repository has no directory %q", g.subdir)
		}
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range ents {
		target := filepath.Join(dst, e.Name())
		if err := os.RemoveAll(target); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(from, e.Name()), target); err != nil {
			return err
		}
	}
	return nil
}
