package docker

import (
	"fmt"
	"sort"
	"time"
)

// pullProgressInterval is how often a running pull is reported in the
// task's events (Nomad's interval).
var pullProgressInterval = 2 * time.Minute

// jsonMessage is one message of the engine's pull or load progress stream.
type jsonMessage struct {
	ID             string `json:"id"`
	Status         string `json:"status"`
	ProgressDetail struct {
		Current int64 `json:"current"`
		Total   int64 `json:"total"`
	} `json:"progressDetail"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// pullProgress sums a pull's layers from its progress messages.
type pullProgress struct {
	layers map[string]*layerProgress
}

type layerProgress struct {
	done           bool
	current, total int64
}

func newPullProgress() *pullProgress { return &pullProgress{layers: map[string]*layerProgress{}} }

// layerStatuses are the statuses of messages about one layer (others, such
// as "Pulling from <repo>" with the tag as ID, are not).
var layerStatuses = map[string]bool{
	"Pulling fs layer": true, "Waiting": true, "Downloading": true, "Verifying Checksum": true,
	"Download complete": true, "Extracting": true, "Pull complete": true, "Already exists": true,
}

func (p *pullProgress) add(m jsonMessage) {
	if m.ID == "" || !layerStatuses[m.Status] {
		return
	}
	l := p.layers[m.ID]
	if l == nil {
		l = &layerProgress{}
		p.layers[m.ID] = l
	}
	switch m.Status {
	case "Pull complete", "Already exists", "Download complete":
		l.done = true
		if l.total > 0 {
			l.current = l.total
		}
	case "Downloading":
		l.current, l.total = m.ProgressDetail.Current, m.ProgressDetail.Total
	}
}

// String is e.g. "Pulled 1/3 layers (12.0 MiB/40.0 MiB)".
func (p *pullProgress) String() string {
	ids := make([]string, 0, len(p.layers))
	for id := range p.layers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	done := 0
	var cur, total int64
	for _, id := range ids {
		l := p.layers[id]
		if l.done {
			done++
		}
		cur, total = cur+l.current, total+l.total
	}
	const mib = 1 << 20
	return fmt.Sprintf("Pulled %d/%d layers (%.1f MiB/%.1f MiB)", done, len(ids), float64(cur)/mib, float64(total)/mib)
}
