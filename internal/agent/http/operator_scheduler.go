package httpapi

import (
	"net/http"
	"strconv"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/operator/scheduler/configuration: GET reads the scheduler
// configuration, PUT/POST replaces it (?cas=<ModifyIndex> for a
// check-and-set write; the answer's Updated says whether it happened).
func (s *server) operatorSchedulerConfigRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	switch r.Method {
	case http.MethodGet:
		args := structs.GenericRequest{}
		if err := s.parseQuery(r, &args.QueryOptions); err != nil {
			return nil, err
		}
		var reply structs.SchedulerConfigurationResponse
		if err := s.cfg.RPC.RPC("Operator.SchedulerGetConfiguration", &args, &reply); err != nil {
			return nil, err
		}
		setMeta(w, &reply.QueryMeta)
		return schedulerConfigResponse(&reply), nil
	case http.MethodPut, http.MethodPost:
		var body api.SchedulerConfiguration
		if err := decodeBody(r, &body, false); err != nil {
			return nil, err
		}
		args := structs.SchedulerSetConfigRequest{Config: structs.SchedulerConfiguration{
			SchedulerAlgorithm: string(body.SchedulerAlgorithm),
			PreemptionConfig: structs.PreemptionConfig{
				SystemSchedulerEnabled:   body.PreemptionConfig.SystemSchedulerEnabled,
				SysBatchSchedulerEnabled: body.PreemptionConfig.SysBatchSchedulerEnabled,
				BatchSchedulerEnabled:    body.PreemptionConfig.BatchSchedulerEnabled,
				ServiceSchedulerEnabled:  body.PreemptionConfig.ServiceSchedulerEnabled,
			},
			MemoryOversubscriptionEnabled: body.MemoryOversubscriptionEnabled,
			RejectJobRegistration:         body.RejectJobRegistration,
			PauseEvalBroker:               body.PauseEvalBroker,
			NodeLimitForFeasibilityChecks: body.NodeLimitForFeasibilityChecks,
		}}
		if idx, ok, err := configCASParam(r); err != nil {
			return nil, err
		} else if ok {
			args.CAS, args.Config.ModifyIndex = true, idx
		}
		s.parseWrite(r, &args.WriteRequest)
		var reply structs.SchedulerSetConfigurationResponse
		if err := s.cfg.RPC.RPC("Operator.SchedulerSetConfiguration", &args, &reply); err != nil {
			return nil, err
		}
		setIndex(w, reply.Index)
		return &api.SchedulerSetConfigurationResponse{Updated: reply.Updated, WriteMeta: api.WriteMeta{LastIndex: reply.Index}}, nil
	}
	return nil, errInvalidMethod
}

// schedulerConfigResponse is the wire shape of a read (Nomad's: the
// configuration and the query's Index, LastContact, KnownLeader).
func schedulerConfigResponse(reply *structs.SchedulerConfigurationResponse) any {
	type out struct {
		SchedulerConfig *api.SchedulerConfiguration
		Index           uint64
		LastContact     int64
		KnownLeader     bool
		NextToken       string
	}
	o := &out{Index: reply.Index, LastContact: reply.LastContact.Milliseconds(), KnownLeader: reply.KnownLeader}
	if c := reply.SchedulerConfig; c != nil {
		o.SchedulerConfig = &api.SchedulerConfiguration{
			SchedulerAlgorithm: api.SchedulerAlgorithm(c.SchedulerAlgorithm),
			PreemptionConfig: api.PreemptionConfig{
				SystemSchedulerEnabled:   c.PreemptionConfig.SystemSchedulerEnabled,
				SysBatchSchedulerEnabled: c.PreemptionConfig.SysBatchSchedulerEnabled,
				BatchSchedulerEnabled:    c.PreemptionConfig.BatchSchedulerEnabled,
				ServiceSchedulerEnabled:  c.PreemptionConfig.ServiceSchedulerEnabled,
			},
			MemoryOversubscriptionEnabled: c.MemoryOversubscriptionEnabled,
			RejectJobRegistration:         c.RejectJobRegistration,
			PauseEvalBroker:               c.PauseEvalBroker,
			NodeLimitForFeasibilityChecks: c.NodeLimitForFeasibilityChecks,
			CreateIndex:                   c.CreateIndex,
			ModifyIndex:                   c.ModifyIndex,
		}
	}
	return o
}

// configCASParam reads a configuration write's ?cas=<ModifyIndex>: ok is
// false when it is absent. Present but empty or not a number is a 400, as
// Nomad answers it: "?cas=$IDX" with IDX unset must not become an
// unconditional write over someone else's change.
func configCASParam(r *http.Request) (uint64, bool, error) {
	vals, ok := r.URL.Query()["cas"]
	if !ok {
		return 0, false, nil
	}
	v := ""
	if len(vals) > 0 {
		v = vals[0]
	}
	idx, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, false, structs.NewErrCoded(400, "Error parsing cas value: %v", err)
	}
	return idx, true, nil
}
