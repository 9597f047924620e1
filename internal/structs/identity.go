package structs

// SignedWorkloadIdentity is one JWT minted for a task's identity block
// ("default" for the unnamed one).
type SignedWorkloadIdentity struct {
	TaskName     string
	IdentityName string
	JWT          string
	// Expiration is when the token expires (Unix nanoseconds; 0: never).
	Expiration int64
}

// AllocIdentitiesRequest asks the servers to sign the workload identities
// of an allocation's tasks (a client agent, with its node secret).
type AllocIdentitiesRequest struct {
	AllocID string
	QueryOptions
}

// AllocIdentitiesResponse answers Alloc.SignIdentities.
type AllocIdentitiesResponse struct {
	Identities []*SignedWorkloadIdentity
	QueryMeta
}
