package fsm

import (
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// jobRegistered keeps the periodic_launch table and tells the sink about the
// stored job. Launch times come from the entry (the parent's SubmitTime, or
// the time encoded in a periodic child's ID), never from a clock.
func (f *FSM) jobRegistered(index uint64, job *structs.Job) error {
	ns := job.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	st := f.State()
	switch {
	case job.IsPeriodic():
		// A new parent counts as launched when submitted, so a leader
		// change right after submission does not force a launch.
		ex, err := st.PeriodicLaunchByID(nil, ns, job.ID)
		if err != nil {
			return err
		}
		if ex == nil {
			l := &structs.PeriodicLaunch{ID: job.ID, Namespace: ns, Launch: time.Unix(0, job.SubmitTime).UTC()}
			if err := st.UpsertPeriodicLaunch(index, l); err != nil {
				return err
			}
		}
	case job.ParentID != "" && structs.IsPeriodicChildOf(job.ID, job.ParentID):
		if t, ok := structs.PeriodicLaunchTime(job.ID); ok {
			l := &structs.PeriodicLaunch{ID: job.ParentID, Namespace: ns, Launch: t}
			if err := st.UpsertPeriodicLaunch(index, l); err != nil {
				return err
			}
		}
	}
	f.notifyJob(ns, job.ID)
	return nil
}

// jobPurged forgets a purged parent's launches and tells the sink.
func (f *FSM) jobPurged(index uint64, namespace, id string) error {
	if err := f.State().DeletePeriodicLaunch(index, namespace, id); err != nil {
		return err
	}
	if err := f.State().DeleteJobRestart(index, namespace, id); err != nil {
		return err
	}
	if sink := f.eventSink(); sink != nil {
		sink.JobDeleted(namespace, id)
	}
	return nil
}

// notifyJob reports the stored version of a job to the sink.
func (f *FSM) notifyJob(namespace, id string) {
	sink := f.eventSink()
	if sink == nil {
		return
	}
	if job, err := f.State().JobByID(nil, namespace, id); err == nil && job != nil {
		sink.JobUpserted(job)
	}
}
