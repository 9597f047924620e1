package structs

// KeyringGetRootKeyRequest is Keyring.Get, the server-to-server fetch of a
// root key's material by a server whose keystore lacks it. The answering
// server does not return the material to the caller: it delivers it
// (Keyring.Deliver) to ReplyAddr, which must be a server in the Raft
// configuration, sealed to ReplyPublicKey (an ephemeral X25519 key of the
// asking server). A caller that is not a server gets nothing.
type KeyringGetRootKeyRequest struct {
	KeyID          string
	ReplyAddr      string
	ReplyPublicKey []byte
	QueryOptions
}

// KeyringGetRootKeyResponse answers Keyring.Get once the material is
// delivered.
type KeyringGetRootKeyResponse struct {
	QueryMeta
}

// KeyringDeliverRootKeyRequest is Keyring.Deliver: a key's material
// sealed (AES-256-GCM) under the X25519 secret shared by the asker's
// ReplyPublicKey and the deliverer's ephemeral PublicKey. It is accepted
// only for a fetch the receiving server has pending under ReplyPublicKey.
type KeyringDeliverRootKeyRequest struct {
	KeyID          string
	ReplyPublicKey []byte
	PublicKey      []byte
	SealedKey      []byte
	WriteRequest
}

// RootKeyMaterial is a root key's secret material, as a keystore holds it.
type RootKeyMaterial struct {
	PrivateKey    []byte
	EncryptionKey []byte
}
