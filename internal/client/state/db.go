package state

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/nomad/api"
	bolt "go.etcd.io/bbolt"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

// FileName is the database's name inside the client's state dir.
const FileName = "state.db"

// schemaVersion is written to the meta bucket; Open refuses a newer one.
const schemaVersion = 1

var (
	metaBucket   = []byte("meta")
	allocsBucket = []byte("allocations")

	versionKey      = []byte("version")
	allocKey        = []byte("alloc")
	deployStatusKey = []byte("deploy_status")
	taskStateKey    = []byte("task_state")
	localStateKey   = []byte("local_state")
	checksKey       = []byte("checks")
	taskPrefix      = "task-"
)

// LocalTaskState is what only this client knows about a task: the driver's
// handle (nil when no task process exists) and the restart tracker.
type LocalTaskState struct {
	// Handle is the driver's handle. Its State is "starting" from just
	// before StartTask until the handle the driver returned replaces it, so
	// a client that dies in between still asks the driver to recover.
	Handle *drivers.TaskHandle
	// RestartIntervalStart and RestartCount are the restart tracker: the
	// start of the current restart interval and the restarts within it.
	RestartIntervalStart time.Time
	RestartCount         int
	// ArtifactsDone is set once the task's artifacts are fetched: a
	// restart of the task, or a client that restores it, does not fetch
	// them again.
	ArtifactsDone bool
}

// TaskRecord is one task's stored state.
type TaskRecord struct {
	State *structs.TaskState
	Local *LocalTaskState
}

// CheckResult is the latest result of one of an allocation's
// Nomad-native service checks, with the run of consecutive outcomes that
// success_before_passing and failures_before_critical count.
type CheckResult struct {
	Status    api.AllocCheckStatus
	Successes int
	Failures  int
}

// AllocRecord is one allocation's stored state.
type AllocRecord struct {
	Alloc            *structs.Allocation
	DeploymentStatus *structs.AllocDeploymentStatus
	Tasks            map[string]*TaskRecord
	// Checks are the latest check results by check ID.
	Checks map[string]*CheckResult
}

// DB is the client's state database. A nil *DB stores nothing and loads
// nothing (dev mode). It is safe for concurrent use.
type DB struct {
	db *bolt.DB

	mu     sync.Mutex
	closed bool
	// hashes of the stored values, to skip unchanged writes.
	hashes map[string][32]byte
}

// Open opens (creating) the database at path.
func Open(path string) (*DB, error) { return openWithTimeout(path, 5*time.Second) }

func openWithTimeout(path string, timeout time.Duration) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("client state %s: %w (is another agent using this data dir?)", path, err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		m, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		if v := m.Get(versionKey); v != nil {
			if len(v) != 1 || int(v[0]) > schemaVersion {
				return fmt.Errorf("client state %s has schema version %v, newer than this agent's %d", path, v, schemaVersion)
			}
		} else if err := m.Put(versionKey, []byte{schemaVersion}); err != nil {
			return err
		}
		_, err = tx.CreateBucketIfNotExists(allocsBucket)
		return err
	})
	if err != nil {
		b.Close()
		return nil, err
	}
	return &DB{db: b, hashes: map[string][32]byte{}}, nil
}

// Close closes the database; later writes are dropped.
func (d *DB) Close() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	return d.db.Close()
}

func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := codec.NewEncoder(&buf, structs.MsgpackHandle).Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decode(b []byte, out any) error {
	return codec.NewDecoderBytes(b, structs.MsgpackHandle).Decode(out)
}

// put stores v under allocations/<allocID>[/<sub>]/<key>, unless the same
// bytes are stored there already.
func (d *DB) put(allocID, sub string, key []byte, v any) error {
	if d == nil {
		return nil
	}
	if allocID == "" {
		return errors.New("client state: empty allocation ID")
	}
	b, err := encode(v)
	if err != nil {
		return fmt.Errorf("client state: encode %s: %w", key, err)
	}
	hk := allocID + "/" + sub + "/" + string(key)
	h := sha256.Sum256(b)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	if old, ok := d.hashes[hk]; ok && old == h {
		return nil
	}
	err = d.db.Update(func(tx *bolt.Tx) error {
		ab, err := tx.Bucket(allocsBucket).CreateBucketIfNotExists([]byte(allocID))
		if err != nil {
			return err
		}
		if sub != "" {
			if ab, err = ab.CreateBucketIfNotExists([]byte(sub)); err != nil {
				return err
			}
		}
		return ab.Put(key, b)
	})
	if err != nil {
		return fmt.Errorf("client state: %w", err)
	}
	d.hashes[hk] = h
	return nil
}

// PutAlloc stores the server's copy of an allocation.
func (d *DB) PutAlloc(a *structs.Allocation) error {
	if a == nil {
		return errors.New("client state: nil allocation")
	}
	return d.put(a.ID, "", allocKey, a)
}

// PutDeploymentStatus stores the deployment health the client observed.
func (d *DB) PutDeploymentStatus(allocID string, s *structs.AllocDeploymentStatus) error {
	if s == nil {
		return nil
	}
	return d.put(allocID, "", deployStatusKey, s)
}

// PutCheckResults stores the latest results of an allocation's checks
// (replacing what was stored; empty once its checks stopped).
func (d *DB) PutCheckResults(allocID string, results map[string]*CheckResult) error {
	if results == nil {
		results = map[string]*CheckResult{}
	}
	return d.put(allocID, "", checksKey, results)
}

// PutTaskState stores a task's state.
func (d *DB) PutTaskState(allocID, task string, s *structs.TaskState) error {
	return d.put(allocID, taskPrefix+task, taskStateKey, s)
}

// PutTaskLocalState stores a task's handle and restart tracker.
func (d *DB) PutTaskLocalState(allocID, task string, s *LocalTaskState) error {
	return d.put(allocID, taskPrefix+task, localStateKey, s)
}

// DeleteAlloc removes everything stored for an allocation.
func (d *DB) DeleteAlloc(allocID string) error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	for k := range d.hashes {
		if strings.HasPrefix(k, allocID+"/") {
			delete(d.hashes, k)
		}
	}
	err := d.db.Update(func(tx *bolt.Tx) error {
		err := tx.Bucket(allocsBucket).DeleteBucket([]byte(allocID))
		if errors.Is(err, bolt.ErrBucketNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("client state: %w", err)
	}
	return nil
}

// Allocs loads every stored allocation. Records left without an allocation
// (a task's late write after the allocation was deleted) are removed. A
// record that cannot be decoded is dropped and named in a *DamagedError
// returned with everything else that could be read.
func (d *DB) Allocs() ([]*AllocRecord, error) {
	if d == nil {
		return nil, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("client state: database is closed")
	}
	var out []*AllocRecord
	var orphans [][]byte
	// problems are the records that could not be read: a bad allocation
	// is left out, a bad deployment status, check results or task record
	// is dropped from its allocation. One damaged value must not make the
	// client forget every allocation (their tasks would run twice).
	var problems []error
	err := d.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(allocsBucket).ForEachBucket(func(id []byte) error {
			ab := tx.Bucket(allocsBucket).Bucket(id)
			raw := ab.Get(allocKey)
			if raw == nil {
				orphans = append(orphans, append([]byte(nil), id...))
				return nil
			}
			rec := &AllocRecord{Tasks: map[string]*TaskRecord{}}
			if err := decode(raw, &rec.Alloc); err != nil || rec.Alloc == nil {
				problems = append(problems, fmt.Errorf("allocation %s left out: %v", id, orNil(err)))
				return nil
			}
			if v := ab.Get(deployStatusKey); v != nil {
				if err := decode(v, &rec.DeploymentStatus); err != nil {
					rec.DeploymentStatus = nil
					problems = append(problems, fmt.Errorf("allocation %s deployment status dropped: %w", id, err))
				}
			}
			if v := ab.Get(checksKey); v != nil {
				if err := decode(v, &rec.Checks); err != nil {
					rec.Checks = nil
					problems = append(problems, fmt.Errorf("allocation %s check results dropped: %w", id, err))
				}
			}
			defer func() { out = append(out, rec) }()
			return ab.ForEachBucket(func(name []byte) error {
				if !strings.HasPrefix(string(name), taskPrefix) {
					return nil
				}
				tb := ab.Bucket(name)
				tr := &TaskRecord{}
				if v := tb.Get(taskStateKey); v != nil {
					if err := decode(v, &tr.State); err != nil {
						tr.State = nil
						problems = append(problems, fmt.Errorf("allocation %s %s state dropped: %w", id, name, err))
					}
				}
				if v := tb.Get(localStateKey); v != nil {
					if err := decode(v, &tr.Local); err != nil {
						tr.Local = nil
						problems = append(problems, fmt.Errorf("allocation %s %s local state dropped: %w", id, name, err))
					}
				}
				rec.Tasks[strings.TrimPrefix(string(name), taskPrefix)] = tr
				return nil
			})
		})
	})
	if err != nil {
		return nil, fmt.Errorf("client state: %w", err)
	}
	if len(orphans) > 0 {
		_ = d.db.Update(func(tx *bolt.Tx) error {
			for _, id := range orphans {
				_ = tx.Bucket(allocsBucket).DeleteBucket(id)
			}
			return nil
		})
	}
	if len(problems) > 0 {
		return out, &DamagedError{Problems: problems}
	}
	return out, nil
}

// DamagedError lists the stored records Allocs could not read; the
// records it returned with it are usable.
type DamagedError struct{ Problems []error }

func (e *DamagedError) Error() string {
	return "client state: damaged records: " + errors.Join(e.Problems...).Error()
}

func orNil(err error) any {
	if err == nil {
		return "no allocation"
	}
	return err
}
