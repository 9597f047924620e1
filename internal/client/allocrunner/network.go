package allocrunner

import (
	"errors"

	"github.com/drover-project/drover/internal/client/bridgenet"
	"github.com/drover-project/drover/internal/structs"
)

// Network sets up and tears down the network of an allocation whose group
// is in bridge mode (bridgenet.Manager).
type Network interface {
	Setup(allocID string, ports structs.AllocatedPorts) (*bridgenet.Status, error)
	Teardown(allocID string) error
}

func bridgeMode(tg *structs.TaskGroup) bool {
	for _, n := range tg.Networks {
		if n != nil && n.Mode == "bridge" {
			return true
		}
	}
	return false
}

func netNSPath(allocID string) string { return bridgenet.NetNSPath(allocID) }

// setupNetwork gives a bridge-mode allocation its namespace, address and
// port mappings before any task starts (or finds them after an agent
// restart), and tells the tasks and the servers its address.
func (ar *AllocRunner) setupNetwork() error {
	if ar.netns == "" {
		return nil
	}
	if ar.cfg.Network == nil {
		msg := ar.cfg.NetworkUnavailable
		if msg == "" {
			msg = "bridge networking is not available on this node"
		}
		return errors.New(msg)
	}
	ar.mu.Lock()
	a := *ar.alloc
	ar.mu.Unlock()
	var ports structs.AllocatedPorts
	if a.AllocatedResources != nil {
		ports = a.AllocatedResources.Shared.Ports
	}
	if ar.netCreator != nil {
		if err := ar.netCreator.CreateNetwork(a.ID, ar.netns); err != nil {
			return err
		}
	}
	st, err := ar.cfg.Network.Setup(a.ID, ports)
	if err != nil {
		return err
	}
	ar.mu.Lock()
	cp := *ar.alloc
	cp.NetworkStatus = &structs.AllocNetworkStatus{InterfaceName: st.Interface, Address: st.Address}
	ar.alloc = &cp
	ar.mu.Unlock()
	for _, e := range ar.tasks {
		e.tr.Update(&cp)
	}
	ar.report()
	return nil
}

// teardownNetwork removes the allocation's network once its tasks are done
// for good (never on detach: a later agent re-attaches to it).
func (ar *AllocRunner) teardownNetwork() {
	if ar.netns == "" || ar.cfg.Network == nil || ar.detached() {
		return
	}
	if err := ar.cfg.Network.Teardown(ar.cfg.Alloc.ID); err != nil {
		ar.logger.Error("failed to tear down the allocation's network", "error", err)
	}
	if ar.netCreator != nil {
		if err := ar.netCreator.DestroyNetwork(ar.cfg.Alloc.ID); err != nil {
			ar.logger.Error("failed to remove the allocation's network namespace holder", "driver", ar.netCreatorName, "error", err)
		}
	}
}
