package drivers

// NetworkCreator is implemented by drivers whose tasks can only join an
// allocation's network namespace one way: the docker driver's containers
// join another container's namespace, so it makes the namespace itself
// (a pause container) and mounts it where the allocation's network setup
// then configures it.
type NetworkCreator interface {
	// CreateNetwork makes (or, after an agent restart, finds) the
	// allocation's namespace and mounts it at nsPath. Idempotent.
	CreateNetwork(allocID, nsPath string) error
	// DestroyNetwork removes what CreateNetwork made. Idempotent.
	DestroyNetwork(allocID string) error
}
