package structs

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/cronexpr"
)

// Periodic spec types and parameterized payload modes, as Nomad names them.
const (
	PeriodicSpecCron = "cron"

	DispatchPayloadOptional  = "optional"
	DispatchPayloadRequired  = "required"
	DispatchPayloadForbidden = "forbidden"

	// DispatchPayloadSizeLimit bounds a dispatch payload (16 KiB, as Nomad).
	DispatchPayloadSizeLimit = 16 * 1024

	periodicLaunchSuffix = "/periodic-"
	dispatchLaunchSuffix = "/dispatch-"
)

// PeriodicLaunch records the last launch of a periodic parent, so a new
// leader can tell whether it missed one.
type PeriodicLaunch struct {
	ID          string
	Namespace   string
	Launch      time.Time
	CreateIndex uint64
	ModifyIndex uint64
}

// PeriodicSpecs returns the cron expressions of a periodic config: Spec and
// every entry of Specs, empty strings dropped.
func PeriodicSpecs(p *PeriodicConfig) []string {
	if p == nil {
		return nil
	}
	var out []string
	if p.Spec != nil && *p.Spec != "" {
		out = append(out, *p.Spec)
	}
	for _, s := range p.Specs {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// PeriodicLocation returns the time zone launches are computed in (UTC when
// unset).
func PeriodicLocation(p *PeriodicConfig) (*time.Location, error) {
	if p == nil || p.TimeZone == nil || *p.TimeZone == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(*p.TimeZone)
}

// NextPeriodicLaunch returns the earliest instant strictly after from that
// matches any of the config's cron specs, evaluated in its time zone. The
// zero time means the specs never fire again.
func NextPeriodicLaunch(p *PeriodicConfig, from time.Time) (time.Time, error) {
	loc, err := PeriodicLocation(p)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid time zone: %w", err)
	}
	var next time.Time
	for _, spec := range PeriodicSpecs(p) {
		e, err := cronexpr.Parse(spec)
		if err != nil {
			return time.Time{}, fmt.Errorf("failed parsing cron expression %q: %w", spec, err)
		}
		n := e.Next(from.In(loc))
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next, nil
}

// PeriodicChildID is the ID of a periodic parent's child launched at t.
func PeriodicChildID(parentID string, t time.Time) string {
	return parentID + periodicLaunchSuffix + strconv.FormatInt(t.Unix(), 10)
}

// PeriodicLaunchTime parses the launch time out of a periodic child's ID.
func PeriodicLaunchTime(childID string) (time.Time, bool) {
	i := strings.LastIndex(childID, periodicLaunchSuffix)
	if i < 0 {
		return time.Time{}, false
	}
	sec, err := strconv.ParseInt(childID[i+len(periodicLaunchSuffix):], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, 0).UTC(), true
}

// IsPeriodicChildOf reports whether child was launched by parentID's
// periodic dispatcher.
func IsPeriodicChildOf(childID, parentID string) bool {
	rest, ok := strings.CutPrefix(childID, parentID+periodicLaunchSuffix)
	if !ok {
		return false
	}
	_, err := strconv.ParseInt(rest, 10, 64)
	return err == nil
}

// DispatchedID is the ID of a parameterized parent's dispatched child:
// <parent>/dispatch-[<prefix>-]<unix>-<8 hex>.
func DispatchedID(parentID, prefix string, t time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	if prefix != "" {
		prefix += "-"
	}
	return parentID + dispatchLaunchSuffix + prefix + strconv.FormatInt(t.Unix(), 10) + "-" + hex.EncodeToString(b[:])
}

// DerivePeriodicChild builds the child a periodic parent launches at t:
// periodic block removed, ParentID set, server-managed fields reset.
func DerivePeriodicChild(parent *Job, t time.Time) *Job {
	c := parent.Copy()
	c.ID = PeriodicChildID(parent.ID, t)
	c.Name = c.ID
	c.ParentID = parent.ID
	c.Periodic = nil
	resetServerFields(c)
	return c
}

func resetServerFields(j *Job) {
	j.Status, j.StatusDescription = "", ""
	j.Stable, j.Stop = false, false
	j.Version, j.VersionTag = 0, nil
	j.CreateIndex, j.ModifyIndex, j.JobModifyIndex = 0, 0, 0
}

// ValidateDispatch checks a dispatch's payload and meta against the
// parent's parameterized block. Errors name the offending keys.
func ValidateDispatch(p *ParameterizedJobConfig, payload []byte, meta map[string]string) error {
	if p == nil {
		return fmt.Errorf("job is not parameterized")
	}
	if len(payload) > DispatchPayloadSizeLimit {
		return fmt.Errorf("Payload exceeds maximum size; %d > %d", len(payload), DispatchPayloadSizeLimit)
	}
	switch p.Payload {
	case DispatchPayloadForbidden:
		if len(payload) != 0 {
			return fmt.Errorf("Payload is not allowed")
		}
	case DispatchPayloadRequired:
		if len(payload) == 0 {
			return fmt.Errorf("Payload is not provided")
		}
	}
	var missing, unknown []string
	for _, k := range p.MetaRequired {
		if _, ok := meta[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range meta {
		if !slices.Contains(p.MetaRequired, k) && !slices.Contains(p.MetaOptional, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(unknown)
	if len(missing) > 0 {
		return fmt.Errorf("Dispatch did not provide required meta keys: %v", missing)
	}
	if len(unknown) > 0 {
		return fmt.Errorf("Dispatch request included unpermitted metadata keys: %v", unknown)
	}
	return nil
}

// DeriveDispatchedChild builds the child of a dispatch: the parent with the
// payload, the dispatch meta merged over the job meta, Dispatched set.
func DeriveDispatchedChild(parent *Job, id string, payload []byte, meta map[string]string, token string) *Job {
	c := parent.Copy()
	c.ID = id
	c.Name = id
	c.ParentID = parent.ID
	c.Dispatched = true
	c.DispatchIdempotencyToken = token
	c.Payload = payload
	if len(meta) > 0 {
		if c.Meta == nil {
			c.Meta = make(map[string]string, len(meta))
		}
		for k, v := range meta {
			c.Meta[k] = v
		}
	}
	resetServerFields(c)
	return c
}

// validatePeriodicAndParameterized checks the periodic and parameterized
// blocks and dispatch_payload placement.
func (j *Job) validatePeriodicAndParameterized(v *ValidationError) {
	if p := j.Periodic; p != nil && (p.Enabled == nil || *p.Enabled) {
		if j.Type != JobTypeBatch && j.Type != JobTypeSysBatch {
			v.add("Periodic: periodic can only be used with %q or %q scheduler", JobTypeBatch, JobTypeSysBatch)
		}
		if p.SpecType != nil && *p.SpecType != "" && *p.SpecType != PeriodicSpecCron {
			v.add("Periodic.SpecType: unknown periodic specification type %q", *p.SpecType)
		}
		specs := PeriodicSpecs(p)
		if len(specs) == 0 {
			v.add("Periodic.Spec: must specify a spec")
		}
		if p.Spec != nil && *p.Spec != "" && len(p.Specs) > 0 {
			v.add("Periodic: only one of cron and crons may be set")
		}
		for _, s := range specs {
			if _, err := cronexpr.Parse(s); err != nil {
				v.add("Periodic.Spec: invalid cron spec %q: %v", s, err)
			}
		}
		if _, err := PeriodicLocation(p); err != nil {
			v.add("Periodic.TimeZone: invalid time zone %q: %v", *p.TimeZone, err)
		}
	}
	if p := j.ParameterizedJob; p != nil {
		if j.Type != JobTypeBatch && j.Type != JobTypeSysBatch {
			v.add("Parameterized: parameterized job can only be used with %q or %q scheduler", JobTypeBatch, JobTypeSysBatch)
		}
		switch p.Payload {
		case "", DispatchPayloadOptional, DispatchPayloadRequired, DispatchPayloadForbidden:
		default:
			v.add("Parameterized.Payload: unknown payload requirement %q", p.Payload)
		}
		for _, k := range p.MetaRequired {
			if slices.Contains(p.MetaOptional, k) {
				v.add("Parameterized: meta key %q is both required and optional", k)
			}
		}
	}
	for _, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		for _, t := range tg.Tasks {
			if t == nil || t.DispatchPayload == nil {
				continue
			}
			if j.ParameterizedJob == nil {
				v.add("Task %q: dispatch_payload is only allowed in parameterized jobs", t.Name)
			} else if strings.Contains(t.DispatchPayload.File, "..") {
				v.add("Task %q: dispatch_payload file %q escapes the task's local directory", t.Name, t.DispatchPayload.File)
			}
		}
	}
}

// PeriodicForceRequest launches a periodic parent's child now.
type PeriodicForceRequest struct {
	JobID string
	WriteRequest
}

// PeriodicForceResponse answers a force launch.
type PeriodicForceResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	Index           uint64
}

// JobDispatchRequest dispatches a parameterized job.
type JobDispatchRequest struct {
	JobID   string
	Payload []byte
	Meta    map[string]string
	// IdPrefixTemplate goes into the child's ID after "dispatch-".
	IdPrefixTemplate string
	// Priority overrides the child's priority when set.
	Priority int
	// IdempotencyToken defaults to the write's idempotency token.
	IdempotencyToken string
	WriteRequest
}

// JobDispatchResponse answers a dispatch.
type JobDispatchResponse struct {
	DispatchedJobID string
	EvalID          string
	EvalCreateIndex uint64
	JobCreateIndex  uint64
	Index           uint64
}
