package server

import (
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/structs"
)

// schedulerConfigReader is a state store or snapshot.
type schedulerConfigReader interface {
	SchedulerConfig(ws memdb.WatchSet) (*structs.SchedulerConfiguration, error)
}

// schedulerConfigOf returns the scheduler configuration stored in st, or
// the one the server's config asks for while none is stored.
func (s *Server) schedulerConfigOf(st schedulerConfigReader) *structs.SchedulerConfiguration {
	if c, err := st.SchedulerConfig(nil); err == nil && c != nil {
		return c
	}
	return s.config.bootstrapSchedulerConfig()
}

// poolConfigReader is a state store or snapshot: the job of an evaluation
// and its node pool.
type poolConfigReader interface {
	schedulerConfigReader
	JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error)
	NodePoolByName(ws memdb.WatchSet, name string) (*structs.NodePool, error)
}

// schedulerOptions fills a scheduler's configuration from the stored
// scheduler configuration of the snapshot it will work on: every worker
// honours a change from its next evaluation on, without a restart. The
// node pool of job namespace/jobID overrides the algorithm and memory
// oversubscription when its SchedulerConfiguration sets them.
func (s *Server) schedulerOptions(cfg scheduler.Config, st poolConfigReader, namespace, jobID string) scheduler.Config {
	sc := s.schedulerConfigOf(st)
	cfg.Algorithm = sc.EffectiveAlgorithm()
	cfg.PreemptionEnabled = sc.PreemptionEnabled()
	cfg.MemoryOversubscription = sc.MemoryOversubscriptionEnabled
	if jobID == "" {
		return cfg
	}
	job, err := st.JobByID(nil, namespace, jobID)
	if err != nil || job == nil || job.NodePool == "" {
		return cfg
	}
	if pool, err := st.NodePoolByName(nil, job.NodePool); err == nil && pool != nil {
		cfg.Algorithm, cfg.MemoryOversubscription = pool.SchedulerConfiguration.Apply(cfg.Algorithm, cfg.MemoryOversubscription)
	}
	return cfg
}

// registrationsAllowed refuses job register, dispatch and scale while the
// operator has set RejectJobRegistration. Without ACLs there is no
// management token to exempt, so every request is refused, as Nomad does.
func (s *Server) registrationsAllowed() error {
	if c, err := s.State().SchedulerConfig(nil); err == nil && c != nil && c.RejectJobRegistration {
		return structs.ErrJobRegistrationDisabled
	}
	return nil
}

// ensureSchedulerConfig stores the bootstrap configuration when none is
// stored (the first leader of a cluster) and returns the current one.
func (s *Server) ensureSchedulerConfig() *structs.SchedulerConfiguration {
	if c, err := s.State().SchedulerConfig(nil); err == nil && c != nil {
		return c
	}
	req := &structs.SchedulerSetConfigRequest{Config: *s.config.bootstrapSchedulerConfig(), CAS: true}
	if _, _, err := s.raftApply(structs.SchedulerConfigRequestType, req); err != nil {
		s.logger.Error("storing the default scheduler configuration failed", "error", err)
	}
	return s.schedulerConfigOf(s.State())
}

// setBrokerPaused enables or disables the eval broker and blocked evals
// for PauseEvalBroker while leading. Unpausing rebuilds them from state:
// the evaluations written while paused are pending there. It does nothing
// once stopCh is closed (leadership is being revoked).
func (s *Server) setBrokerPaused(stopCh chan struct{}, paused bool) {
	s.brokerMu.Lock()
	defer s.brokerMu.Unlock()
	select {
	case <-stopCh:
		return
	default:
	}
	if s.broker.Enabled() == !paused {
		return
	}
	if paused {
		s.logger.Info("eval broker paused by the scheduler configuration")
		s.broker.SetEnabled(false)
		s.blocked.SetEnabled(false)
		return
	}
	s.logger.Info("eval broker resumed by the scheduler configuration")
	s.broker.SetEnabled(true)
	s.blocked.SetEnabled(true)
	s.restoreEvals()
}

// watchSchedulerConfig follows the stored scheduler configuration while
// leading and pauses or resumes the eval broker as it asks.
func (s *Server) watchSchedulerConfig(stopCh chan struct{}) {
	for {
		st := s.State()
		ws := memdb.NewWatchSet()
		ws.Add(st.AbandonCh())
		ws.Add(stopCh)
		c, err := st.SchedulerConfig(ws)
		if err == nil && c != nil {
			s.setBrokerPaused(stopCh, c.PauseEvalBroker)
		}
		ws.Watch(nil)
		select {
		case <-stopCh:
			return
		default:
		}
	}
}
