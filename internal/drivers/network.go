package drivers

// NetworkCreator is implemented by drivers whose tasks can only join an
// allocation's network namespace one way: the docker driver's containers
// join another container's namespace, so it makes the namespace itself
// (a pause container) and mounts it where the allocation's network setup
// then configures it. Drivers whose tasks join a namespace by its path
// (raw_exec, exec, java, qemu, and podman: `ns:<path>`) leave it to the
// client, which creates it.
type NetworkCreator interface {
	// CreatesNetwork reports whether this driver makes the allocation's
	// namespace. A driver type shared by several flavors (docker's,
	// which podman's is) says false for the flavors that join by path.
	CreatesNetwork() bool
	// CreateNetwork makes (or, after an agent restart, finds) the
	// allocation's namespace and mounts it at nsPath. Idempotent.
	CreateNetwork(allocID, nsPath string) error
	// DestroyNetwork removes what CreateNetwork made. Idempotent.
	DestroyNetwork(allocID string) error
}
