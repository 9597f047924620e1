package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/drover-project/drover/internal/structs"
)

// maxSnapshotUpload bounds a restore's body: a snapshot is larger than any
// other request, so it has its own limit instead of http_max_body_size.
const maxSnapshotUpload = 2 << 30

// /v1/operator/snapshot: GET streams a snapshot archive (nomad operator
// snapshot save; `Digest: sha-256=...` as api.Operator().Snapshot checks),
// PUT restores one from the body (nomad operator snapshot restore).
func (s *server) operatorSnapshotRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	switch r.Method {
	case http.MethodGet:
		args := structs.SnapshotSaveRequest{}
		if err := s.parseQuery(r, &args.QueryOptions); err != nil {
			return nil, err
		}
		var reply structs.SnapshotSaveResponse
		if err := s.cfg.RPC.RPC("Operator.SnapshotSave", &args, &reply); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(reply.Archive)
		setMeta(w, &reply.QueryMeta)
		w.Header().Set("Digest", "sha-256="+base64.StdEncoding.EncodeToString(sum[:]))
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(reply.Archive)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(reply.Archive)
		return nil, nil
	case http.MethodPut, http.MethodPost:
		args := structs.SnapshotRestoreRequest{}
		s.parseWrite(r, &args.WriteRequest)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, bodyTooLarge(-1, mbe.Limit)
			}
			return nil, structs.NewErrCoded(400, "reading the snapshot from the request body: %v", err)
		}
		if len(body) == 0 {
			return nil, structs.NewErrCoded(400, "missing snapshot archive in the request body")
		}
		args.Archive = body
		var reply structs.GenericResponse
		if err := s.cfg.RPC.RPC("Operator.SnapshotRestore", &args, &reply); err != nil {
			return nil, err
		}
		setIndex(w, reply.Index)
		return struct{}{}, nil
	}
	return nil, errInvalidMethod
}

// /v1/operator/raft/transfer-leadership?id=|address=: PUT hands leadership
// to that server (nomad operator raft transfer-leadership).
func (s *server) operatorRaftTransferLeadershipRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodPut && r.Method != http.MethodPost {
		return nil, errInvalidMethod
	}
	q := r.URL.Query()
	args := structs.RaftPeerRequest{ID: q.Get("id"), Address: q.Get("address")}
	s.parseWrite(r, &args.WriteRequest)
	if (args.ID == "") == (args.Address == "") {
		return nil, structs.NewErrCoded(400, "Must specify either ?id with the server's ID or ?address with IP:port of the server to transfer leadership to")
	}
	var reply struct{}
	if err := s.cfg.RPC.RPC("Operator.TransferLeadershipToPeer", &args, &reply); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}
