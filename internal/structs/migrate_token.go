package structs

import (
	"crypto/hmac"
	"crypto/sha512"
	"encoding/base64"
)

// MigrateToken authorises a node to fetch the directory of allocation
// prevAllocID from the node that ran it (ephemeral_disk migrate): an HMAC
// of the allocation ID keyed with that node's secret ID. The servers hand
// it to the node of the replacement; the previous node checks it with its
// own secret (CompareMigrateToken), so no server is asked.
func MigrateToken(prevAllocID, prevNodeSecretID string) string {
	h := hmac.New(sha512.New, []byte(prevNodeSecretID))
	h.Write([]byte(prevAllocID))
	return base64.URLEncoding.EncodeToString(h.Sum(nil))
}

// CompareMigrateToken reports whether token is MigrateToken(allocID,
// nodeSecretID), in constant time.
func CompareMigrateToken(allocID, nodeSecretID, token string) bool {
	if nodeSecretID == "" || token == "" {
		return false
	}
	return hmac.Equal([]byte(MigrateToken(allocID, nodeSecretID)), []byte(token))
}
