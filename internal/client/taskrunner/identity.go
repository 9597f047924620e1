package taskrunner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// SignIdentitiesFunc asks the servers for the workload identities of an
// allocation's tasks (Alloc.SignIdentities).
type SignIdentitiesFunc func(allocID string) ([]*structs.SignedWorkloadIdentity, error)

// identityWanted reports whether the task asks for any workload identity
// to be exposed (file or env).
func identityWanted(t *structs.Task) bool {
	if t.Identity != nil && (t.Identity.File || t.Identity.Env) {
		return true
	}
	for _, wi := range t.Identities {
		if wi != nil && (wi.File || wi.Env) {
			return true
		}
	}
	return false
}

// identityBlock finds the task's block of an identity name.
func identityBlock(t *structs.Task, name string) *structs.WorkloadIdentity {
	if name == "default" {
		return t.Identity
	}
	for _, wi := range t.Identities {
		if wi != nil && wi.Name == name {
			return wi
		}
	}
	return nil
}

// identityFile is where an identity is written: secrets/nomad_token for
// the default one, secrets/nomad_<name>.jwt for named ones.
func (tr *TaskRunner) identityFile(name string) string {
	if name == "default" {
		return filepath.Join(tr.cfg.TaskDir, "secrets", "nomad_token")
	}
	return filepath.Join(tr.cfg.TaskDir, "secrets", "nomad_"+name+".jwt")
}

// setupIdentities fetches the task's identities, writes those with
// file = true into secrets/ and keeps those with env = true for the task's
// environment (NOMAD_TOKEN, NOMAD_TOKEN_<name>). It returns the earliest
// expiry of a written identity (zero: none expires).
func (tr *TaskRunner) setupIdentities() (time.Time, error) {
	wanted := identityWanted(tr.cfg.Task)
	if tr.cfg.SignIdentities == nil || (!wanted && tr.cfg.TaskAPI == nil && len(tr.cfg.Task.Templates) == 0) {
		return time.Time{}, nil
	}
	ids, err := tr.cfg.SignIdentities(tr.cfg.Alloc.ID)
	if err != nil {
		if !wanted {
			// Only the Task API would have used it: the task runs, and
			// its socket answers as the anonymous token.
			tr.logger.Warn("no workload identity for the task API", "error", err)
			return time.Time{}, nil
		}
		return time.Time{}, err
	}
	env := map[string]string{}
	var next time.Time
	for _, id := range ids {
		if id.TaskName != tr.cfg.Task.Name {
			continue
		}
		if id.IdentityName == "default" {
			tr.mu.Lock()
			tr.defaultIdentity = id.JWT
			tr.mu.Unlock()
		}
		wi := identityBlock(tr.cfg.Task, id.IdentityName)
		if wi == nil {
			continue
		}
		if wi.File {
			p := tr.identityFile(id.IdentityName)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return time.Time{}, err
			}
			tmp := p + ".tmp"
			if err := os.WriteFile(tmp, []byte(id.JWT), 0o600); err != nil {
				return time.Time{}, fmt.Errorf("writing identity %q: %w", id.IdentityName, err)
			}
			if err := os.Rename(tmp, p); err != nil {
				return time.Time{}, err
			}
			if id.Expiration > 0 {
				if exp := time.Unix(0, id.Expiration); next.IsZero() || exp.Before(next) {
					next = exp
				}
			}
		}
		if wi.Env {
			if id.IdentityName == "default" {
				env["NOMAD_TOKEN"] = id.JWT
			} else {
				env["NOMAD_TOKEN_"+strings.ReplaceAll(id.IdentityName, "-", "_")] = id.JWT
			}
		}
	}
	tr.mu.Lock()
	tr.identityEnv = env
	tr.mu.Unlock()
	return next, nil
}

// renewIdentities rewrites the identity files before they expire (at two
// thirds of their remaining life) until the task is done.
func (tr *TaskRunner) renewIdentities(first time.Time) {
	next := first
	for !next.IsZero() {
		wait := time.Until(next) * 2 / 3
		if wait < time.Second {
			wait = time.Second
		}
		select {
		case <-tr.killCh:
			return
		case <-tr.waitCh:
			return
		case <-time.After(wait):
		}
		n, err := tr.setupIdentities()
		if err != nil {
			tr.logger.Warn("renewing workload identities failed; retrying", "error", err)
			continue
		}
		next = n
	}
}
