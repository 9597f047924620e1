package fsm

import (
	"fmt"

	"github.com/drover-project/drover/internal/structs"
)

func (f *FSM) applyJobStability(buf []byte, index uint64) error {
	var req structs.JobStabilityRequest
	if err := decode(buf, &req, "job stability"); err != nil {
		return err
	}
	return f.State().UpdateJobStability(index, nsOrDefault(req.Namespace), req.JobID, req.JobVersion, req.Stable)
}

func (f *FSM) applyScalingEvent(buf []byte, index uint64) error {
	var req structs.ScalingEventRequest
	if err := decode(buf, &req, "scaling event"); err != nil {
		return err
	}
	return f.State().UpsertScalingEvent(index, &req)
}

func (f *FSM) applyJobVersionTag(buf []byte, index uint64) error {
	var req structs.JobTagRequest
	if err := decode(buf, &req, "job version tag"); err != nil {
		return err
	}
	if !req.Unset && req.Tag == nil {
		return fmt.Errorf("fsm: job version tag without tag")
	}
	return f.State().UpdateJobVersionTag(index, nsOrDefault(req.Namespace), &req)
}

func nsOrDefault(ns string) string {
	if ns == "" {
		return structs.DefaultNamespace
	}
	return ns
}
