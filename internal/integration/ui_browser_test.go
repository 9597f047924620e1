package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The web UI's browser tests drive Debian's Chromium through chromedp
// against a real dev agent. They skip with a message when no Chromium is
// installed, and fail under CI=true (.ci/run installs it).

// browser is one headless Chromium tab.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu      sync.Mutex
	console []string // the page's last console messages, for failure messages
}

var (
	shotsOnce sync.Once
	shotsDir  string
)

// shotDir is $DROVER_UI_SHOTS, or a temp dir kept after the run (its path
// is logged) so the screenshots can be looked at.
func shotDir(t *testing.T) string {
	shotsOnce.Do(func() {
		shotsDir = os.Getenv("DROVER_UI_SHOTS")
		if shotsDir == "" {
			d, err := os.MkdirTemp("", "drover-ui-shots-")
			if err != nil {
				t.Fatal(err)
			}
			shotsDir = d
		}
		if err := os.MkdirAll(shotsDir, 0o755); err != nil {
			t.Fatal(err)
		}
	})
	return shotsDir
}

func chromiumPath(t *testing.T) string {
	for _, p := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (CI installs it in .ci/run): the UI's browser tests cannot run")
	}
	t.Skip("chromium is not installed: apt-get install -y chromium")
	return ""
}

// newBrowser starts a headless Chromium with its own profile directory at
// width x height. Cleanup closes it and kills the crashpad handlers it
// left (they outlive the browser), found by that profile directory.
func newBrowser(t *testing.T, width, height int) *browser {
	t.Helper()
	path := chromiumPath(t)
	profile, err := os.MkdirTemp("", "drover-ui-profile-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(width, height),
		chromedp.Flag("disable-crash-reporter", true),
		chromedp.Flag("disable-breakpad", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
		killByCmdline(profile)
		os.RemoveAll(profile)
	})
	b := &browser{t: t, ctx: ctx}
	// The console (failed loads, uncaught exceptions) goes into failure
	// messages: a page stuck on "Loading…" says why.
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, fmt.Sprintf("%s %s: %s (%s:%d)", m.Time.Format("15:04:05.000"), m.Type, m.Text, m.URL, m.Line))
			if len(b.console) > 30 {
				b.console = b.console[len(b.console)-30:]
			}
			b.mu.Unlock()
		}
	}()
	return b
}

// killByCmdline kills the processes whose command line mentions s (the
// browser's own profile directory, so only this test's processes).
func killByCmdline(s string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// run runs actions with a deadline; a failure fails the test with what
// the page showed.
func (b *browser) run(what string, d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\npage text:\n%s", what, err, b.text())
	}
}

// text is the page's visible text (for failure messages).
func (b *browser) text() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + (document.body ? document.body.innerText : "")`))
	b.mu.Lock()
	defer b.mu.Unlock()
	return tail(s, 60) + "\nlast console messages:\n" + strings.Join(b.console, "\n")
}

// waitJS polls a JavaScript condition in the page until it is true.
func (b *browser) waitJS(what string, d time.Duration, cond string) {
	b.t.Helper()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(`+cond+`)`))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out after %v waiting for %s (%s; err %v)\npage text:\n%s", d, what, cond, err, b.text())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// evalJS evaluates js in the page and returns its value.
func evalJS[T any](b *browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v\npage text:\n%s", js, err, b.text())
	}
	return v
}

// shot writes a screenshot of the viewport to the screenshots dir.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(shotDir(b.t), name+".png")
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", p)
}

func jsString(s string) string { return fmt.Sprintf("%q", s) }
