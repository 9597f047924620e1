package events

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// A node pool event reads back through the official client's
// Event.NodePool, and a pool created by a node's registration is not
// announced.
func TestNodePoolEvent(t *testing.T) {
	pool := &structs.NodePool{Name: "gpu", Description: "GPUs", NodeIdentityTTL: time.Hour, ModifyIndex: 7}
	e := fromChange(TypeNodePoolUpserted, 7, &memdb.Change{Table: "node_pools", After: pool})
	if e == nil {
		t.Fatal("no event for a node pool upsert")
	}
	var got api.Event
	if err := json.Unmarshal(e.JSON(), &got); err != nil {
		t.Fatal(err)
	}
	p, err := got.NodePool()
	if err != nil || got.Topic != api.TopicNodePool || got.Type != "NodePoolUpserted" || got.Key != "gpu" ||
		p.Name != "gpu" || p.Description != "GPUs" || p.NodeIdentityTTL != time.Hour {
		t.Fatalf("event %+v pool %+v err %v", got, p, err)
	}
	if e := fromChange(TypeNodeRegistration, 8, &memdb.Change{Table: "node_pools", After: &structs.NodePool{Name: "edge"}}); e != nil {
		t.Fatalf("a node registration announced its pool: %+v", e)
	}
}
