package server

import (
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Operator serves the operator API's Raft views and changes.
type Operator struct{ srv *Server }

// RaftGetConfiguration returns the leader's Raft configuration: every
// server with its address, whether it leads and whether it votes. A stale
// read is this server's own view of the configuration, answered even with
// no leader and before its state store caught up (the configuration is
// Raft's, not the store's): in an outage it is how the operator sees which
// servers the survivors still count on.
func (o *Operator) RaftGetConfiguration(args *structs.GenericRequest, reply *structs.RaftConfigurationResponse) error {
	local := args.AllowStale && (args.Region == "" || args.Region == o.srv.config.Region)
	if !local {
		if done, err := o.srv.forward("Operator.RaftGetConfiguration", args.Region, false, args, reply); done {
			return err
		}
	}
	if err := o.srv.authorize(args.AuthToken, (*acl.ACL).AllowOperatorRead); err != nil {
		return err
	}
	f := o.srv.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	_, leaderID := o.srv.raft.LeaderWithID()
	self := raft.ServerID(o.srv.config.NodeID)
	reply.Index = f.Index()
	for _, s := range f.Configuration().Servers {
		node := string(s.Address)
		if s.ID == self && o.srv.config.NodeName != "" {
			node = o.srv.config.NodeName + "." + o.srv.config.Region
		} else if name := o.srv.memberName(string(s.ID)); name != "" {
			node = name
		}
		reply.Servers = append(reply.Servers, &structs.RaftServer{
			ID: string(s.ID), Node: node, Address: string(s.Address),
			Leader: s.ID == leaderID, Voter: s.Suffrage == raft.Voter,
			RaftProtocol: strconv.Itoa(int(o.srv.raftProtocol)),
		})
	}
	return nil
}

// RaftRemovePeerByID removes the server with args.ID from the Raft
// configuration.
func (o *Operator) RaftRemovePeerByID(args *structs.RaftPeerRequest, reply *struct{}) error {
	if done, err := o.srv.forward("Operator.RaftRemovePeerByID", args.Region, false, args, reply); done {
		return err
	}
	if err := o.srv.authorize(args.AuthToken, (*acl.ACL).AllowOperatorWrite); err != nil {
		return err
	}
	return o.removePeer(func(s raft.Server) bool { return string(s.ID) == args.ID },
		fmt.Sprintf("id %q", args.ID), args.ID == "")
}

// RaftRemovePeerByAddress removes the server at args.Address from the Raft
// configuration.
func (o *Operator) RaftRemovePeerByAddress(args *structs.RaftPeerRequest, reply *struct{}) error {
	if done, err := o.srv.forward("Operator.RaftRemovePeerByAddress", args.Region, false, args, reply); done {
		return err
	}
	if err := o.srv.authorize(args.AuthToken, (*acl.ACL).AllowOperatorWrite); err != nil {
		return err
	}
	return o.removePeer(func(s raft.Server) bool { return string(s.Address) == args.Address },
		fmt.Sprintf("address %q", args.Address), args.Address == "")
}

// removePeer removes the one server match picks. It refuses a peer that is
// not in the configuration, and the last voter: without it the cluster
// could never elect a leader again.
func (o *Operator) removePeer(match func(raft.Server) bool, what string, empty bool) error {
	if empty {
		return structs.NewErrCoded(400, "must name the peer to remove by ID or by address")
	}
	f := o.srv.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	var target *raft.Server
	voters := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
		}
		if match(s) {
			target = &s
		}
	}
	if target == nil {
		return structs.NewErrCoded(400, "%s was not found in the Raft configuration", what)
	}
	if target.Suffrage == raft.Voter && voters == 1 {
		return structs.NewErrCoded(400, "%s is the only voter: removing it would leave the cluster unable to elect a leader", what)
	}
	o.srv.logger.Warn("removing Raft peer", "id", target.ID, "address", target.Address)
	return o.srv.raft.RemoveServer(target.ID, f.Index(), 10*time.Second).Error()
}

// SchedulerGetConfiguration returns the stored scheduler configuration
// (the bootstrap one before the first leader stored it).
func (o *Operator) SchedulerGetConfiguration(args *structs.GenericRequest, reply *structs.SchedulerConfigurationResponse) error {
	if done, err := o.srv.forward("Operator.SchedulerGetConfiguration", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	if err := o.srv.authorize(args.AuthToken, (*acl.ACL).AllowOperatorRead); err != nil {
		return err
	}
	return o.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		c, err := st.SchedulerConfig(ws)
		if err != nil {
			return err
		}
		if c == nil {
			c = o.srv.config.bootstrapSchedulerConfig()
		} else {
			cp := *c
			c = &cp
		}
		if c.SchedulerAlgorithm == "" {
			c.SchedulerAlgorithm = structs.SchedulerAlgorithmBinpack
		}
		reply.SchedulerConfig = c
		reply.Index = maxIndex(st, "scheduler_config")
		return nil
	})
}

// SchedulerSetConfiguration stores a new scheduler configuration through
// Raft. With args.CAS it is written only if the stored ModifyIndex is
// args.Config.ModifyIndex; reply.Updated says whether it was.
func (o *Operator) SchedulerSetConfiguration(args *structs.SchedulerSetConfigRequest, reply *structs.SchedulerSetConfigurationResponse) error {
	if done, err := o.srv.forward("Operator.SchedulerSetConfiguration", args.Region, false, args, reply); done {
		return err
	}
	if err := o.srv.authorize(args.AuthToken, (*acl.ACL).AllowOperatorWrite); err != nil {
		return err
	}
	if err := args.Config.Validate(); err != nil {
		return err
	}
	if args.Config.SchedulerAlgorithm == "" {
		args.Config.SchedulerAlgorithm = structs.SchedulerAlgorithmBinpack
	}
	resp, index, err := o.srv.raftApply(structs.SchedulerConfigRequestType, args)
	if err != nil {
		return err
	}
	updated, _ := resp.(bool)
	reply.Updated = updated
	reply.Index = index
	o.srv.logger.Info("scheduler configuration written", "updated", updated, "config", args.Config.String())
	return nil
}
