package jobspec

import (
	"bytes"
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// MaxNestingDepth bounds how deeply a jobspec (or a variables file) may nest
// blocks, brackets, parentheses, strings and template interpolations. HCL's
// parser recurses once or more per level and Go cannot recover from a stack
// overflow: a 4 MB jobspec of nested brackets sent to /v1/jobs/parse killed
// the whole agent. A real jobspec nests about ten levels
// (job, group, task, config, a list, a string, an interpolation, ...).
const MaxNestingDepth = 100

// checkNesting scans HCL native syntax (or JSON) without parsing it and
// reports the first place that nests deeper than MaxNestingDepth. It knows
// just enough of the syntax (comments, quoted strings and their escapes,
// heredocs, ${ and %{ interpolations) not to count brackets inside text.
func checkNesting(path string, src []byte) hcl.Diagnostics {
	const (
		quote  = '"'
		heredc = 'H'
		interp = 'I'
	)
	var stack []byte         // open constructs, innermost last
	var terminators [][]byte // one per heredoc on the stack
	line, lineStart := 1, 0
	tooDeep := func(i int) hcl.Diagnostics {
		pos := hcl.Pos{Line: line, Column: i - lineStart + 1, Byte: i}
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Nesting too deep",
			Detail:   fmt.Sprintf("The jobspec nests blocks, brackets, strings and interpolations more than %d levels deep.", MaxNestingDepth),
			Subject:  &hcl.Range{Filename: path, Start: pos, End: pos},
		}}
	}
	push := func(c byte) bool {
		stack = append(stack, c)
		return len(stack) <= MaxNestingDepth
	}
	top := func() byte {
		if len(stack) == 0 {
			return 0
		}
		return stack[len(stack)-1]
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '\n' {
			line, lineStart = line+1, i+1
			if top() == heredc {
				// A heredoc ends at a line holding only its terminator.
				end := bytes.IndexByte(src[i+1:], '\n')
				if end < 0 {
					end = len(src) - i - 1
				}
				if bytes.Equal(bytes.TrimSpace(src[i+1:i+1+end]), terminators[len(terminators)-1]) {
					stack = stack[:len(stack)-1]
					terminators = terminators[:len(terminators)-1]
					i += end
				}
			}
			continue
		}
		switch top() {
		case quote, heredc:
			switch {
			case c == '\\' && top() == quote:
				i++ // the escaped character is text
			case c == '"' && top() == quote:
				stack = stack[:len(stack)-1]
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == '{':
				i++
				if !push(interp) {
					return tooDeep(i)
				}
			case (c == '$' || c == '%') && i+2 < len(src) && src[i+1] == c && src[i+2] == '{':
				i += 2 // $${ and %%{ are literal text
			}
			continue
		}
		switch c {
		case '#':
			i = skipLine(src, i)
			continue
		case '/':
			if i+1 < len(src) && src[i+1] == '/' {
				i = skipLine(src, i)
				continue
			}
			if i+1 < len(src) && src[i+1] == '*' {
				end := bytes.Index(src[i+2:], []byte("*/"))
				if end < 0 {
					return nil // unterminated: the parser says so
				}
				for _, b := range src[i : i+2+end] {
					if b == '\n' {
						line++
					}
				}
				i += 2 + end + 1
				lineStart = bytes.LastIndexByte(src[:i+1], '\n') + 1
				continue
			}
		case '"':
			if !push(quote) {
				return tooDeep(i)
			}
		case '{', '[', '(':
			if !push(c) {
				return tooDeep(i)
			}
		case '}', ']', ')':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case '<':
			if term, ok := heredocTerminator(src[i:]); ok {
				if !push(heredc) {
					return tooDeep(i)
				}
				terminators = append(terminators, term)
				i = skipLine(src, i) // the newline then checks for the end
			}
		}
	}
	return nil
}

// skipLine returns the index of the newline ending the line at i (or the
// last index of src).
func skipLine(src []byte, i int) int {
	end := bytes.IndexByte(src[i:], '\n')
	if end < 0 {
		return len(src) - 1
	}
	return i + end - 1
}

// heredocTerminator recognises "<<ID" or "<<-ID" up to the end of the line.
func heredocTerminator(s []byte) ([]byte, bool) {
	if len(s) < 3 || s[0] != '<' || s[1] != '<' {
		return nil, false
	}
	s = s[2:]
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	n := 0
	for n < len(s) && (s[n] == '_' || s[n] >= 'a' && s[n] <= 'z' || s[n] >= 'A' && s[n] <= 'Z' || n > 0 && s[n] >= '0' && s[n] <= '9') {
		n++
	}
	if n == 0 {
		return nil, false
	}
	rest := s[n:]
	if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, false
	}
	return s[:n], true
}
