package structs

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorCodeSurvivesStringification(t *testing.T) {
	cases := []struct {
		err  error
		code int
		msg  string
	}{
		{NewErrCoded(400, "Task group count must be >= 0"), 400, "Task group count must be >= 0"},
		{errors.New(NewErrCoded(404, "job not found").Error()), 404, "job not found"},
		{fmt.Errorf("forwarding: %w", NewErrCoded(409, "a,b")), 409, "a,b"},
		{errors.New("disk exploded"), 500, "disk exploded"},
	}
	for _, c := range cases {
		code, msg := ErrorCode(c.err)
		if code != c.code || msg != c.msg {
			t.Errorf("ErrorCode(%q) = %d %q, want %d %q", c.err, code, msg, c.code, c.msg)
		}
	}
}
