package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/hcl/ast"
	hclparser "github.com/hashicorp/hcl/hcl/parser"
	jsonparser "github.com/hashicorp/hcl/json/parser"
)

// LoadFile reads one agent config file, HCL1 or JSON. JSON is recognised by
// a .json extension or, for any other name (Nomad's test harness writes a
// file with no extension), by its first non-space byte being '{'. Every
// unknown key and wrong type in the file is reported, each with the file,
// line and full key path. LoadFile does not apply feature gates; call
// Validate on the final merged config for that.
func LoadFile(path string) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading agent config: %w", err)
	}
	return parse(path, src)
}

// Parse decodes config text; name is used in error messages and to choose
// the syntax like LoadFile.
func Parse(name string, src []byte) (*Config, error) { return parse(name, src) }

func isJSON(name string, src []byte) bool {
	if strings.EqualFold(filepath.Ext(name), ".json") {
		return true
	}
	trimmed := bytes.TrimLeft(src, " \t\r\n\ufeff")
	trimmed = bytes.TrimPrefix(trimmed, []byte("\xef\xbb\xbf"))
	return len(trimmed) > 0 && trimmed[0] == '{'
}

func parse(name string, src []byte) (*Config, error) {
	var (
		file *ast.File
		err  error
	)
	if isJSON(name, src) {
		file, err = jsonparser.Parse(src)
	} else {
		file, err = hclparser.Parse(src)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: syntax error: %v", name, err)
	}
	list, ok := file.Node.(*ast.ObjectList)
	if !ok {
		return nil, fmt.Errorf("%s: the file must contain a set of keys and blocks at the top level", name)
	}
	c := &Config{}
	d := &decoder{file: name, origins: map[string]Origin{}}
	d.decodeStruct("", list.Items, reflect.ValueOf(c).Elem())
	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
	}
	c.Files = []string{name}
	c.Origins = d.origins
	return c, nil
}

// LoadPath loads a file, or every *.hcl and *.json file of a directory (not
// recursive) in lexical order, merging them in that order. Other files,
// sub-directories and editor temporaries are skipped. An empty directory
// yields an empty Config.
func LoadPath(path string) (*Config, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("agent config: %w", err)
	}
	if !fi.IsDir() {
		return LoadFile(path)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("agent config directory: %w", err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || strings.HasSuffix(n, "~") || strings.HasPrefix(n, "#") {
			continue
		}
		if ext := strings.ToLower(filepath.Ext(n)); ext != ".hcl" && ext != ".json" {
			continue
		}
		if e.Type()&os.ModeSymlink != 0 {
			// follow links to files, skip links to directories
			if st, err := os.Stat(filepath.Join(path, n)); err != nil || st.IsDir() {
				continue
			}
		}
		names = append(names, n)
	}
	sort.Strings(names)
	out := &Config{}
	var errs []error
	for _, n := range names {
		c, err := LoadFile(filepath.Join(path, n))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = Merge(out, c)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
