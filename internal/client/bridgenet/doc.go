// Package bridgenet owns the networks of allocations whose group asks for
// `network { mode = "bridge" }`: one network namespace per allocation
// (/var/run/netns/<alloc id>), a veth pair from it into the node's bridge
// (client.bridge_network_name, default "nomad"), an address from the
// bridge's subnet (client.bridge_network_subnet, default 172.26.64.0/20)
// with the bridge as default gateway, and the iptables rules that make it
// usable: FORWARD accepts for the bridge (dockerd sets the FORWARD policy
// to DROP and br_netfilter sends bridged frames through it), masquerade for
// egress, and DNAT of each group port from the host's address and host port
// to the allocation's address and `to` port, in a nat chain of our own
// (DROVER-PORTMAP) whose rules carry the allocation ID as a comment, so an
// allocation's mappings are removed with it.
//
// The address plan (IPAM) is a JSON file in the client's state directory:
// an address is never handed to a second allocation while the first holds
// it. Setup is idempotent: an agent that restarts finds the namespace,
// veth and address of a running allocation and keeps them (re-attaches);
// it recreates nothing the tasks are using. A namespace already mounted at
// the allocation's path (the docker driver's pause container, see
// drivers.NetworkCreator) is configured in place, not replaced.
//
// It shells out to iproute2 (`ip`) and iptables rather than speaking
// netlink itself: both are installed wherever Nomad's bridge mode runs
// (CI installs them); a namespace with its veth, address, route and one
// port mapping costs about 36 ms per allocation on this 2-core machine
// (measured with the same ip/iptables calls in a loop of 20 allocations),
// small beside a task's start; and a namespace's interfaces are configured
// with `ip -n` instead of moving an agent thread into the namespace, which
// a Go process must do with care. Setup is serialised per node.
// Linux only, and root only: Supported says why not otherwise.
package bridgenet
