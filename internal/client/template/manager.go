package template

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Backend reads what templates use from the servers. Each call is a
// (possibly blocking, when q.MinIndex > 0) query; it returns the data and
// its index.
type Backend interface {
	ReadVar(q Query, path string) (*structs.VariableDecrypted, uint64, error)
	ListVars(q Query, prefix string) ([]*structs.VariableMetadata, uint64, error)
	Service(q Query, name, choose string) ([]*structs.ServiceRegistration, uint64, error)
	Services(q Query) ([]*structs.ServiceRegistrationListStub, uint64, error)
}

// Query is what a Backend call is made with.
type Query struct {
	Namespace, Region string
	// Token is the task's workload identity.
	Token    string
	MinIndex uint64
	MaxWait  time.Duration
}

type depKind int

const (
	depVar depKind = iota
	depVarList
	depService
	depServices
)

// dep is one thing a render read.
type dep struct {
	kind      depKind
	arg, arg2 string
}

type depState struct {
	index uint64
	value any
}

// Config is what a Manager needs.
type Config struct {
	Templates []*structs.Template
	// TaskDir is the task's directory; AllocDir the allocation's (a
	// destination may not leave it).
	TaskDir, AllocDir string
	// Env is the task's environment (the env function, ${VAR} in
	// destinations and sources).
	Env               map[string]string
	Backend           Backend
	Namespace, Region string
	// Token returns the task's workload identity ("": anonymous).
	Token func() string
	// MaxWait bounds a blocking query (default 30 s).
	MaxWait time.Duration
}

// Manager renders a task's templates and watches what they use.
type Manager struct {
	cfg   Config
	tmpls []*compiled

	mu    sync.Mutex
	cache map[dep]*depState
	used  map[dep]bool
	// complete: the last Render rendered every template (none missing,
	// no error).
	complete bool
}

type compiled struct {
	spec *structs.Template
	name string // as events name it: the destination as written
	body string
	dest string
	// root is the directory dest must stay in (the allocation's), and
	// rel dest within it: files are written through an os.Root, so a
	// symlink the task planted (local/ pointing at /etc) cannot lead the
	// client's writes out of it.
	root, rel string
	perms     os.FileMode
	done      bool // once = true and rendered
}

// New checks the templates (destinations, sources, perms) and reads the
// source files. The error names the template.
func New(cfg Config) (*Manager, error) {
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 30 * time.Second
	}
	if cfg.Token == nil {
		cfg.Token = func() string { return "" }
	}
	m := &Manager{cfg: cfg, cache: map[dep]*depState{}}
	for _, t := range cfg.Templates {
		if t == nil {
			continue
		}
		c, err := m.compile(t)
		if err != nil {
			return nil, err
		}
		m.tmpls = append(m.tmpls, c)
	}
	return m, nil
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (m *Manager) compile(t *structs.Template) (*compiled, error) {
	c := &compiled{spec: t, name: str(t.DestPath)}
	dest, err := ResolveDest(m.cfg.TaskDir, m.cfg.AllocDir, interpolate(str(t.DestPath), m.cfg.Env))
	if err != nil {
		return nil, fmt.Errorf("template %q: %w", c.name, err)
	}
	c.dest = dest
	c.root = m.cfg.AllocDir
	if c.root == "" {
		c.root = filepath.Dir(m.cfg.TaskDir)
	}
	if c.rel, err = filepath.Rel(c.root, dest); err != nil {
		return nil, fmt.Errorf("template %q: %w", c.name, err)
	}
	perms, err := ParsePerms(str(t.Perms))
	if err != nil {
		return nil, fmt.Errorf("template %q: %w", c.name, err)
	}
	c.perms = perms
	c.body = str(t.EmbeddedTmpl)
	if src := str(t.SourcePath); src != "" {
		if c.body != "" {
			return nil, fmt.Errorf("template %q: both source and data are set", c.name)
		}
		p, err := ResolveSource(m.cfg.TaskDir, interpolate(src, m.cfg.Env))
		if err != nil {
			return nil, fmt.Errorf("template %q: %w", c.name, err)
		}
		b, err := readWithin(m.cfg.TaskDir, p)
		if err != nil {
			return nil, fmt.Errorf("template %q: reading source %q: %w", c.name, src, err)
		}
		c.body = string(b)
	}
	if _, err := c.parse(&render{used: map[dep]bool{}}); err != nil {
		return nil, fmt.Errorf("template %q: %w", c.name, err)
	}
	return c, nil
}

func (c *compiled) parse(r *render) (*template.Template, error) {
	left, right := str(c.spec.LeftDelim), str(c.spec.RightDelim)
	tp := template.New(c.name).Delims(left, right).Funcs(r.funcs())
	if c.spec.ErrMissingKey != nil && *c.spec.ErrMissingKey {
		tp = tp.Option("missingkey=error")
	}
	return tp.Parse(c.body)
}

// interpolate replaces ${NAME} with the task environment's value.
func interpolate(s string, env map[string]string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			break
		}
		b.WriteString(s[:i])
		name := s[i+2 : i+j]
		if v, ok := env[name]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+j+1])
		}
		s = s[i+j+1:]
	}
	b.WriteString(s)
	return b.String()
}

// ResolveDest is the host path of a destination: relative to the task
// directory (an absolute path inside it, as ${NOMAD_SECRETS_DIR} gives on
// raw_exec, is taken as is), alloc/... being the allocation's shared
// directory. It must stay inside the allocation directory.
func ResolveDest(taskDir, allocDir, dest string) (string, error) {
	if dest == "" {
		return "", errors.New("destination is empty")
	}
	root := allocDir
	if root == "" {
		root = filepath.Dir(taskDir)
	}
	p := dest
	if !(filepath.IsAbs(dest) && within(taskDir, filepath.Clean(dest))) {
		p = filepath.Join(taskDir, dest)
	}
	p = filepath.Clean(p)
	// alloc/ is the allocation's shared directory, as tasks see it (the
	// task directory on the host has no alloc/ of its own).
	if shared := filepath.Join(taskDir, "alloc"); within(shared, p) {
		p = filepath.Join(root, "alloc", strings.TrimPrefix(p, shared))
	}
	if !within(root, p) || p == taskDir || p == root || p == filepath.Join(root, "alloc") {
		return "", fmt.Errorf("destination %q escapes the allocation directory", dest)
	}
	return p, nil
}

// ResolveSource is the host path of a source file, which must be inside
// the task directory.
func ResolveSource(taskDir, src string) (string, error) {
	p := src
	if !(filepath.IsAbs(src) && within(taskDir, filepath.Clean(src))) {
		p = filepath.Join(taskDir, src)
	}
	p = filepath.Clean(p)
	if !within(taskDir, p) {
		return "", fmt.Errorf("source %q escapes the task directory", src)
	}
	return p, nil
}

func within(root, p string) bool {
	root = filepath.Clean(root)
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// ParsePerms parses perms ("644", "0640"); "" is 0644.
func ParsePerms(s string) (os.FileMode, error) {
	if s == "" {
		return 0o644, nil
	}
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o7777 {
		return 0, fmt.Errorf("perms %q is not an octal file mode", s)
	}
	return os.FileMode(v), nil
}

// isPermissionDenied reports an ACL refusal from the servers.
func isPermissionDenied(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Permission denied")
}

// Fatal reports whether a render error cannot go away by retrying: a
// template error or a refusal, not an unreachable server.
func Fatal(err error) bool {
	var re *RenderError
	if errors.As(err, &re) {
		return re.fatal
	}
	return false
}

// Denied reports a render that failed because the servers refused the
// task's identity.
func Denied(err error) bool {
	var be *backendError
	return errors.As(err, &be) && isPermissionDenied(be.err)
}

// RenderError is a template that failed to render.
type RenderError struct {
	Template string
	Err      error
	fatal    bool
}

func (e *RenderError) Error() string { return fmt.Sprintf("template %q: %v", e.Template, e.Err) }
func (e *RenderError) Unwrap() error { return e.Err }

// backendError marks an error from the servers.
type backendError struct{ err error }

func (e *backendError) Error() string {
	// A refusal crosses the RPC connection as "RPC Error:: 403,Permission
	// denied": the user is told the message.
	if code, msg := structs.ErrorCode(e.err); code >= 400 && code < 500 {
		return msg
	}
	return e.err.Error()
}
func (e *backendError) Unwrap() error { return e.err }

func backendFatal(err error) bool {
	if isPermissionDenied(err) {
		return true
	}
	code, _ := structs.ErrorCode(err)
	return code >= 400 && code < 500
}

func (m *Manager) query(min uint64) Query {
	return Query{Namespace: m.cfg.Namespace, Region: m.cfg.Region, Token: m.cfg.Token(), MinIndex: min, MaxWait: m.cfg.MaxWait}
}

func (m *Manager) fetch(d dep, min uint64) (*depState, error) {
	q := m.query(min)
	var (
		v   any
		idx uint64
		err error
	)
	switch d.kind {
	case depVar:
		var x *structs.VariableDecrypted
		x, idx, err = m.cfg.Backend.ReadVar(q, d.arg)
		v = x
	case depVarList:
		var x []*structs.VariableMetadata
		x, idx, err = m.cfg.Backend.ListVars(q, d.arg)
		v = x
	case depService:
		var x []*structs.ServiceRegistration
		x, idx, err = m.cfg.Backend.Service(q, d.arg, d.arg2)
		v = x
	case depServices:
		var x []*structs.ServiceRegistrationListStub
		x, idx, err = m.cfg.Backend.Services(q)
		v = x
	}
	if err != nil {
		return nil, &backendError{err}
	}
	return &depState{index: idx, value: v}, nil
}

// lookup returns the cached value of d, fetching it when it is not cached.
func (m *Manager) lookup(d dep) (*depState, error) {
	m.mu.Lock()
	st := m.cache[d]
	m.mu.Unlock()
	if st != nil {
		return st, nil
	}
	if m.cfg.Backend == nil {
		return nil, errors.New("no servers to read variables and services from")
	}
	st, err := m.fetch(d, 0)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if cur := m.cache[d]; cur != nil && cur.index >= st.index {
		st = cur
	} else {
		m.cache[d] = st
	}
	m.mu.Unlock()
	return st, nil
}

// Rendered is one template's outcome in a Render.
type Rendered struct {
	Index int // in the task's templates
	// Spec is the template block.
	Spec *structs.Template
	// Changed: the file's content was different (or absent) and was
	// written.
	Changed bool
	// Content is what was rendered.
	Content string
	Dest    string
}

// Result is what Render did.
type Result struct {
	Templates []Rendered
	// Missing lists what blocked a template (Nomad's wording,
	// "nomad.var.block(path@ns.region)"); those templates were not written.
	Missing []string
}

// Render renders every template from what is cached (fetching what is
// not), writing the files whose content changed. A template missing a
// variable is not written; its missing dependencies are in Result.Missing.
func (m *Manager) Render() (Result, error) {
	m.mu.Lock()
	m.complete = false
	m.mu.Unlock()
	var res Result
	used := map[dep]bool{}
	missing := map[string]bool{}
	for i, c := range m.tmpls {
		if c.done {
			continue
		}
		r := &render{m: m, env: m.cfg.Env, used: used}
		tp, err := c.parse(r)
		if err != nil {
			return res, &RenderError{Template: c.name, Err: err, fatal: true}
		}
		var buf bytes.Buffer
		if err := tp.Execute(&buf, nil); err != nil {
			var be *backendError
			fatal := !errors.As(err, &be) || backendFatal(be.err)
			return res, &RenderError{Template: c.name, Err: err, fatal: fatal}
		}
		if len(r.missing) > 0 {
			for _, d := range r.missing {
				missing[m.describe(d)] = true
			}
			continue
		}
		changed, err := writeIfChanged(c, buf.Bytes())
		if err != nil {
			return res, &RenderError{Template: c.name, Err: err, fatal: true}
		}
		if c.spec.Once != nil && *c.spec.Once {
			c.done = true
		}
		res.Templates = append(res.Templates, Rendered{Index: i, Spec: c.spec, Changed: changed, Content: buf.String(), Dest: c.dest})
	}
	for d := range missing {
		res.Missing = append(res.Missing, d)
	}
	sort.Strings(res.Missing)
	m.mu.Lock()
	m.used = used
	m.complete = len(res.Missing) == 0
	m.mu.Unlock()
	return res, nil
}

func (m *Manager) describe(d dep) string {
	ns := m.cfg.Namespace
	if ns == "" {
		ns = "default"
	}
	region := m.cfg.Region
	if region == "" {
		region = "global"
	}
	return fmt.Sprintf("nomad.var.block(%s@%s.%s)", d.arg, ns, region)
}

// writeIfChanged writes content to the template's destination unless the
// file already holds it (a restored task's files are not rewritten), then
// sets its mode and owner.
func writeIfChanged(c *compiled, content []byte) (bool, error) {
	r, err := os.OpenRoot(c.root)
	if err != nil {
		return false, err
	}
	defer r.Close()
	old, err := r.ReadFile(c.rel)
	changed := err != nil || !bytes.Equal(old, content)
	if changed {
		if err := r.MkdirAll(filepath.Dir(c.rel), 0o755); err != nil {
			return false, err
		}
		tmp := c.rel + ".drover-tmp"
		if err := r.WriteFile(tmp, content, c.perms); err != nil {
			return false, err
		}
		if err := r.Chmod(tmp, c.perms); err != nil { // WriteFile's mode is masked by the umask
			r.Remove(tmp)
			return false, err
		}
		if err := chown(r, tmp, c.spec); err != nil {
			r.Remove(tmp)
			return false, err
		}
		if err := r.Rename(tmp, c.rel); err != nil {
			r.Remove(tmp)
			return false, err
		}
		return true, nil
	}
	if err := r.Chmod(c.rel, c.perms); err != nil {
		return false, err
	}
	return false, chown(r, c.rel, c.spec)
}

// readWithin reads the file at p, which must stay within dir even through
// symlinks (a source file the task made a link to /etc/shadow is refused).
func readWithin(dir, p string) ([]byte, error) {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadFile(rel)
}

func chown(r *os.Root, p string, t *structs.Template) error {
	uid, gid := -1, -1
	if t.Uid != nil && *t.Uid >= 0 {
		uid = *t.Uid
	}
	if t.Gid != nil && *t.Gid >= 0 {
		gid = *t.Gid
	}
	if uid < 0 && gid < 0 {
		return nil
	}
	if err := r.Lchown(p, uid, gid); err != nil {
		return fmt.Errorf("setting the owner of %s: %w", filepath.Base(p), err)
	}
	return nil
}

// Watch runs a blocking query for everything the last Render used and
// sends on changed (without blocking; make it buffered) whenever one of
// them changes, until ctx ends. Call it again after each Render: the set
// of dependencies may have changed.
func (m *Manager) Watch(ctx context.Context, changed chan<- struct{}) {
	m.mu.Lock()
	deps := make([]dep, 0, len(m.used))
	for d := range m.used {
		deps = append(deps, d)
	}
	m.mu.Unlock()
	for _, d := range deps {
		go m.watch(ctx, d, changed)
	}
}

func (m *Manager) watch(ctx context.Context, d dep, changed chan<- struct{}) {
	backoff := time.Second
	for ctx.Err() == nil {
		m.mu.Lock()
		var idx uint64
		if st := m.cache[d]; st != nil {
			idx = st.index
		}
		m.mu.Unlock()
		st, err := m.fetch(d, max(idx, 1))
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = time.Second
		if st.index <= idx {
			continue // the query timed out with nothing new
		}
		m.mu.Lock()
		if cur := m.cache[d]; cur == nil || cur.index < st.index {
			m.cache[d] = st
		}
		m.mu.Unlock()
		select {
		case changed <- struct{}{}:
		default:
		}
	}
}

// Static reports whether nothing can change the rendered files any more:
// the last Render rendered every template and read nothing that changes
// (only env and helpers, or once templates).
func (m *Manager) Static() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.complete && len(m.used) == 0
}

// HasDeps reports whether the last Render read anything that can change.
func (m *Manager) HasDeps() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.used) > 0
}

// ParseEnv parses a rendered env template: KEY=VALUE lines; blank lines
// and lines starting with # are skipped; "export " before a key is
// allowed; a value in double quotes is unquoted (\n, \", \\), in single
// quotes taken as is. The error names the line.
func ParseEnv(content string) (map[string]string, error) {
	out := map[string]string{}
	for n, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("line %d: %q is not KEY=VALUE", n+1, line)
		}
		v = strings.TrimSpace(v)
		switch {
		case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
			u, err := strconv.Unquote(v)
			if err != nil {
				return nil, fmt.Errorf("line %d: bad quoted value for %s: %v", n+1, k, err)
			}
			v = u
		case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
			v = v[1 : len(v)-1]
		}
		out[k] = v
	}
	return out, nil
}
