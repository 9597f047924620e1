// Command apisuite summarises a `go test -json` run of Nomad's api package
// tests against Drover and enforces the checked-in list of passing tests:
// every listed test must still pass, and no test may be skipped (a skip means
// the harness did not find our `nomad` wrapper, which must never pass
// silently).
//
// Usage: go test -json ... | go run ./tools/apisuite -passlist tools/apisuite/passing.txt [-update]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func main() {
	passlist := flag.String("passlist", "tools/apisuite/passing.txt", "file listing tests that must pass")
	selfSkip := flag.String("self-skipping", "tools/apisuite/self-skipping.txt", "file listing tests that always skip themselves")
	update := flag.Bool("update", false, "rewrite the pass list with every test that passed")
	verbose := flag.Bool("v", false, "print the failing tests' last output lines")
	flag.Parse()
	allowed, err := readList(*selfSkip)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apisuite:", err)
		os.Exit(2)
	}
	code, err := run(os.Stdin, os.Stdout, *passlist, allowed, *update, *verbose)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apisuite:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run(in io.Reader, out io.Writer, passlist string, selfSkipping []string, update, verbose bool) (int, error) {
	results := map[string]string{} // "pkg.Test" -> pass|fail|skip
	outputs := map[string][]string{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" || strings.Contains(e.Test, "/") {
			continue
		}
		key := shortPkg(e.Package) + "." + e.Test
		switch e.Action {
		case "pass", "fail", "skip":
			results[key] = e.Action
		case "output":
			o := outputs[key]
			if len(o) > 8 {
				o = o[1:]
			}
			outputs[key] = append(o, strings.TrimRight(e.Output, "\n"))
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	var pass, fail, skip []string
	for k, v := range results {
		switch v {
		case "pass":
			pass = append(pass, k)
		case "fail":
			fail = append(fail, k)
		case "skip":
			skip = append(skip, k)
		}
	}
	sort.Strings(pass)
	sort.Strings(fail)
	sort.Strings(skip)
	fmt.Fprintf(out, "%d passed, %d failed, %d skipped\n", len(pass), len(fail), len(skip))
	if verbose {
		for _, f := range fail {
			fmt.Fprintf(out, "FAIL %s\n  %s\n", f, strings.Join(outputs[f], "\n  "))
		}
	}
	if update {
		// Keep the file's comment lines (why a test is left out) and leave
		// out tests they name.
		var header []string
		excluded := map[string]bool{}
		if b, err := os.ReadFile(passlist); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "#") {
					header = append(header, l)
					for _, f := range strings.Fields(l) {
						excluded[strings.Trim(f, ":,.")] = true
					}
				}
			}
		}
		var keep []string
		for _, p := range pass {
			if !excluded[p] {
				keep = append(keep, p)
			}
		}
		out := strings.Join(append(header, keep...), "\n") + "\n"
		return 0, os.WriteFile(passlist, []byte(out), 0o644)
	}
	want, err := readList(passlist)
	if err != nil {
		return 0, err
	}
	code := 0
	allowedSkip := map[string]bool{}
	for _, s := range selfSkipping {
		allowedSkip[strings.Fields(s)[0]] = true
	}
	var badSkips []string
	for _, s := range skip {
		if !allowedSkip[s] {
			badSkips = append(badSkips, s)
		}
	}
	if len(badSkips) > 0 {
		fmt.Fprintf(out, "skipped tests are not allowed (is the nomad wrapper on PATH?): %s\n", strings.Join(badSkips, ", "))
		code = 1
	}
	passed := map[string]bool{}
	for _, p := range pass {
		passed[p] = true
	}
	var regressed []string
	for _, w := range want {
		if !passed[w] {
			regressed = append(regressed, w)
		}
	}
	if len(regressed) > 0 {
		fmt.Fprintf(out, "regressions (listed as passing, now not): %s\n", strings.Join(regressed, ", "))
		for _, r := range regressed {
			fmt.Fprintf(out, "--- %s\n  %s\n", r, strings.Join(outputs[r], "\n  "))
		}
		code = 1
	}
	var newly []string
	listed := map[string]bool{}
	for _, w := range want {
		listed[w] = true
	}
	for name := range excludedByComment(passlist) {
		listed[name] = true // left out on purpose, with a reason
	}
	for _, p := range pass {
		if !listed[p] {
			newly = append(newly, p)
		}
	}
	if len(newly) > 0 {
		fmt.Fprintf(out, "newly passing (add them with -update): %s\n", strings.Join(newly, ", "))
	}
	return code, nil
}

func shortPkg(p string) string {
	return strings.TrimPrefix(p, "github.com/hashicorp/nomad/")
}

func readList(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading pass list: %w", err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, nil
}

// excludedByComment returns the test names mentioned in the pass list's
// comment lines: tests left out on purpose.
func excludedByComment(path string) map[string]bool {
	out := map[string]bool{}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		for _, f := range strings.Fields(l) {
			if f = strings.Trim(f, ":,."); strings.HasPrefix(f, "api.Test") {
				out[f] = true
			}
		}
	}
	return out
}
