package structs

// KeyringGetRootKeyRequest is Keyring.Get, the server-to-server fetch of a
// root key's material by a server whose keystore lacks it. The material
// comes back sealed to ReplyPublicKey (an ephemeral X25519 key of the
// asking server), so it never crosses the wire in the clear.
type KeyringGetRootKeyRequest struct {
	KeyID          string
	ReplyPublicKey []byte
	QueryOptions
}

// KeyringGetRootKeyResponse carries the sealed material: the answering
// server's ephemeral X25519 public key, and the material (JSON of
// RootKeyMaterial) sealed with AES-256-GCM under their shared secret.
type KeyringGetRootKeyResponse struct {
	KeyID     string
	PublicKey []byte
	SealedKey []byte
	QueryMeta
}

// RootKeyMaterial is a root key's secret material, as a keystore holds it.
type RootKeyMaterial struct {
	PrivateKey    []byte
	EncryptionKey []byte
}
