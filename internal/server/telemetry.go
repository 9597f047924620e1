package server

import (
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
)

// Metric keys, named as Nomad names them (go-metrics adds the "nomad"
// service prefix, so these read nomad.nomad.<...>). Only work that happens
// at most once per evaluation, plan or Raft entry is measured here: a
// go-metrics call costs about a microsecond and a dozen allocations, too much
// for per-pull or per-placement paths.
var (
	keyLeaderBarrier   = []string{"nomad", "leader", "barrier"}
	keyLeaderEstablish = []string{"nomad", "leader", "establish_leadership"}
	keyPlanSubmit      = []string{"nomad", "plan", "submit"}
	keyPlanEvaluate    = []string{"nomad", "plan", "evaluate"}
	keyPlanApply       = []string{"nomad", "plan", "apply"}
	keyPlanQueueDepth  = []string{"nomad", "plan", "queue_depth"}
	keyWorkerSubmit    = []string{"nomad", "worker", "submit_plan"}
	keyHeartbeatActive = []string{"nomad", "heartbeat", "active"}

	keyBrokerReady      = []string{"nomad", "broker", "total_ready"}
	keyBrokerUnacked    = []string{"nomad", "broker", "total_unacked"}
	keyBrokerPending    = []string{"nomad", "broker", "total_pending"}
	keyBrokerWaiting    = []string{"nomad", "broker", "total_waiting"}
	keyBrokerCancelable = []string{"nomad", "broker", "total_cancelable"}
	keyBrokerFailed     = []string{"nomad", "broker", "total_failed"}

	keyBlockedTotal   = []string{"nomad", "blocked_evals", "total_blocked"}
	keyBlockedEscaped = []string{"nomad", "blocked_evals", "total_escaped"}
)

// invokeKeys holds nomad.nomad.worker.invoke_scheduler.<type> per scheduler
// type, built once.
var invokeKeys = map[string][]string{}

func init() {
	for _, t := range []string{"service", "batch", "system", "sysbatch", "_core"} {
		invokeKeys[t] = []string{"nomad", "worker", "invoke_scheduler", t}
	}
}

// measureInvoke records how long a scheduler of type typ ran.
func measureInvoke(typ string, start time.Time) {
	if key := invokeKeys[typ]; key != nil {
		metrics.MeasureSince(key, start)
	}
}

// statsInterval is how often the leader publishes its gauges.
func (s *Server) statsInterval() time.Duration {
	if s.config.StatsInterval > 0 {
		return s.config.StatsInterval
	}
	return time.Second
}

// emitLeaderStats publishes the leader's queue gauges at once and then every
// statsInterval until stopCh closes. The queues exist only on the leader,
// which is why only the leader publishes them (as Nomad does).
func (s *Server) emitLeaderStats(stopCh chan struct{}) {
	t := time.NewTicker(s.statsInterval())
	defer t.Stop()
	for {
		s.publishLeaderStats()
		select {
		case <-stopCh:
			return
		case <-s.shutdownCh:
			return
		case <-t.C:
		}
	}
}

// publishLeaderStats sets the leader's gauges once.
func (s *Server) publishLeaderStats() {
	b := s.broker.Stats()
	metrics.SetGauge(keyBrokerReady, float32(b.TotalReady))
	metrics.SetGauge(keyBrokerUnacked, float32(b.TotalUnacked))
	metrics.SetGauge(keyBrokerPending, float32(b.TotalPending))
	metrics.SetGauge(keyBrokerWaiting, float32(b.TotalWaiting))
	metrics.SetGauge(keyBrokerCancelable, float32(b.TotalCancelable))
	metrics.SetGauge(keyBrokerFailed, float32(b.TotalFailed))
	for typ, st := range b.ByScheduler {
		metrics.SetGauge([]string{"nomad", "broker", typ + "_ready"}, float32(st.Ready))
		metrics.SetGauge([]string{"nomad", "broker", typ + "_unacked"}, float32(st.Unacked))
	}

	bl := s.blocked.Stats()
	metrics.SetGauge(keyBlockedTotal, float32(bl.TotalBlocked))
	metrics.SetGauge(keyBlockedEscaped, float32(bl.TotalEscaped))

	metrics.SetGauge(keyPlanQueueDepth, float32(s.planQueue.Stats().Depth))
	metrics.SetGauge(keyHeartbeatActive, float32(s.heartbeats.Count()))
}
