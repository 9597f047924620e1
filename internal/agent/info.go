package agent

import (
	"net"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/agent/config"
	"github.com/drover-project/drover/internal/server"
	"github.com/drover-project/drover/internal/structs"
	"github.com/drover-project/drover/internal/version"
)

// agentInfo answers /v1/agent/{self,members,health}.
type agentInfo struct{ a *Agent }

func (i *agentInfo) Region() string     { return i.a.config.Region }
func (i *agentInfo) Datacenter() string { return i.a.config.Datacenter }
func (i *agentInfo) NodeName() string   { return i.a.config.NodeName }
func (i *agentInfo) IsServer() bool     { return i.a.server != nil }
func (i *agentInfo) IsClient() bool     { return i.a.client != nil }

func (i *agentInfo) ServerHealth() (bool, string) {
	if i.a.server == nil {
		return false, "not a server"
	}
	if i.a.server.LeaderAddr() == "" {
		return false, "No cluster leader"
	}
	return true, "ok"
}

func (i *agentInfo) ClientHealth() (bool, string) {
	if i.a.client == nil {
		return false, "not a client"
	}
	return true, "ok"
}

func (i *agentInfo) member() *structs.ServerMember {
	host, port, _ := net.SplitHostPort(i.a.config.AdvertiseSerfAddr())
	p, _ := strconv.Atoi(port)
	tags := map[string]string{
		"role": "nomad", "region": i.a.config.Region, "dc": i.a.config.Datacenter,
		"build": version.Version, "vsn": "1", "raft_vsn": "3",
	}
	if i.a.server != nil {
		_, rpcPort, _ := net.SplitHostPort(i.a.server.RPCAddr())
		tags["port"] = rpcPort
		tags["rpc_addr"] = host
		tags["id"] = string(i.a.server.ID())
		tags["bootstrap"] = "1"
		tags["expect"] = "1"
	}
	return &structs.ServerMember{Name: i.a.config.NodeName + "." + i.a.config.Region, Addr: host, Port: uint16(p),
		Tags: tags, Status: "alive", ProtocolMin: 1, ProtocolMax: 5, ProtocolCur: 2, DelegateMin: 2, DelegateMax: 5, DelegateCur: 4}
}

// Members lists the servers in the gossip pool (a server's own first; a
// client agent asks a server).
func (i *agentInfo) Members() (*structs.ServerMembersResponse, error) {
	if i.a.server == nil {
		// A client agent asks one of its servers, as Nomad's does.
		var reply structs.ServerMembersResponse
		if err := i.a.RPC("Status.Members", &structs.GenericRequest{QueryOptions: structs.QueryOptions{Region: i.a.config.Region, AllowStale: true}}, &reply); err != nil {
			return nil, err
		}
		return &reply, nil
	}
	resp := i.a.server.MembersResponse()
	if len(resp.Members) == 0 {
		resp.Members = []*structs.ServerMember{i.member()}
	}
	return resp, nil
}

func (i *agentInfo) Self() map[string]any {
	c := i.a.config
	cfg := map[string]any{
		"Region": c.Region, "Datacenter": c.Datacenter, "NodeName": c.NodeName, "DataDir": c.DataDir,
		"BindAddr": c.BindAddr, "Ports": map[string]int{"HTTP": c.Ports.HTTP, "RPC": c.Ports.RPC, "Serf": c.Ports.Serf},
		"Version": map[string]string{"Version": version.Version, "VersionPrerelease": version.Prerelease},
		"Server":  map[string]any{"Enabled": i.a.server != nil, "AuthoritativeRegion": authoritativeRegion(c)},
		"Client":  map[string]any{"Enabled": i.a.client != nil},
		"DevMode": c.DevMode,
	}
	stats := map[string]map[string]string{
		"runtime": {"arch": runtime.GOARCH, "os": runtime.GOOS, "version": runtime.Version(),
			"goroutines": strconv.Itoa(runtime.NumGoroutine()), "cpu_count": strconv.Itoa(runtime.NumCPU())},
	}
	if i.a.server != nil {
		stats["nomad"] = map[string]string{"leader": strconv.FormatBool(i.a.server.IsLeader()),
			"leader_addr": i.a.server.LeaderAddr(), "server": "true"}
		stats["raft"] = i.a.server.Raft().Stats()
		if i.a.server.ReplicatesACLs() {
			stats["acl_replication"] = aclReplicationStats(i.a.server)
		}
	}
	if i.a.client != nil {
		stats["client"] = map[string]string{"node_id": i.a.client.NodeID()}
	}
	out := map[string]any{"config": cfg, "stats": stats}
	if i.a.server != nil {
		if resp := i.a.server.MembersResponse(); len(resp.Members) > 0 {
			out["member"] = resp.Members[0]
		} else {
			out["member"] = i.member()
		}
	}
	return out
}

// aclReplicationStats is the ACL replication's state for /v1/agent/self
// (stats.acl_replication): the authoritative region and, per kind
// (policies, roles, auth-methods, binding-rules, tokens, namespaces,
// node-pools), the authoritative region's index last mirrored, when that
// succeeded, the last round's error ("" when it succeeded) and what is
// kept here though deleted upstream because it is still in use ("name:
// why", "; "-separated). Only the leader replicates;
// another server shows what it did when it last led.
func aclReplicationStats(s *server.Server) map[string]string {
	out := map[string]string{"authoritative_region": s.AuthoritativeRegion(), "running": strconv.FormatBool(s.IsLeader())}
	for _, st := range s.ACLReplication() {
		out[st.Kind+".remote_index"] = strconv.FormatUint(st.RemoteIndex, 10)
		last := ""
		if !st.LastSuccess.IsZero() {
			last = st.LastSuccess.UTC().Format(time.RFC3339)
		}
		out[st.Kind+".last_success"] = last
		out[st.Kind+".last_error"] = st.LastError
		out[st.Kind+".kept"] = strings.Join(st.Kept, "; ")
	}
	return out
}

func authoritativeRegion(c *config.Config) string {
	if c.Server != nil {
		return c.Server.AuthoritativeRegion
	}
	return ""
}
