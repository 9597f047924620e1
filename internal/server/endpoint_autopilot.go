package server

import (
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// AutopilotGetConfiguration returns the stored autopilot configuration (the
// agent's before the first leader stored it).
func (o *Operator) AutopilotGetConfiguration(args *structs.GenericRequest, reply *structs.AutopilotConfigResponse) error {
	if done, err := o.srv.forward("Operator.AutopilotGetConfiguration", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	return o.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		c, err := st.AutopilotConfig(ws)
		if err != nil {
			return err
		}
		if c == nil {
			c = o.srv.bootstrapAutopilotConfig()
		} else {
			cp := *c
			c = &cp
		}
		reply.Config = c
		reply.Index = maxIndex(st, "autopilot_config")
		return nil
	})
}

// AutopilotSetConfiguration writes the autopilot configuration; with CAS
// only over the configuration at args.Config.ModifyIndex.
func (o *Operator) AutopilotSetConfiguration(args *structs.AutopilotSetConfigRequest, reply *structs.AutopilotSetConfigResponse) error {
	if done, err := o.srv.forward("Operator.AutopilotSetConfiguration", args.Region, false, args, reply); done {
		return err
	}
	if err := args.Config.Validate(); err != nil {
		return err
	}
	resp, idx, err := o.srv.raftApply(structs.AutopilotConfigRequestType, args)
	if err != nil {
		return err
	}
	updated, _ := resp.(bool)
	reply.Updated = updated
	reply.Index = idx
	return nil
}

// ServerHealth reports every server's health as the leader's autopilot
// sees it.
func (o *Operator) ServerHealth(args *structs.GenericRequest, reply *structs.AutopilotHealthResponse) error {
	if done, err := o.srv.forward("Operator.ServerHealth", args.Region, false, args, reply); done {
		return err
	}
	h, err := o.srv.autopilotHealth()
	if err != nil {
		return err
	}
	*reply = *h
	return nil
}
