package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Handler serves the control endpoint:
//
//	GET  /stats                 counters as JSON
//	POST /lose?count=N|percent=P  lose N (or P% of all) healthy nodes
//	POST /fail?count=N|percent=P  fail N (or P% of all) healthy nodes
//
// lose and fail answer {"node_ids": [...]}.
func (s *Sim) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, s.Stats())
	})
	act := func(f func(int) []string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			n, ok := s.countParam(r)
			if !ok {
				http.Error(w, "want count=N or percent=P (a positive number)", http.StatusBadRequest)
				return
			}
			writeJSON(w, map[string]any{"node_ids": f(n)})
		}
	}
	mux.HandleFunc("POST /lose", act(s.Lose))
	mux.HandleFunc("POST /fail", act(s.Fail))
	return mux
}

func (s *Sim) countParam(r *http.Request) (int, bool) {
	if v := r.URL.Query().Get("count"); v != "" {
		n, err := strconv.Atoi(v)
		return n, err == nil && n > 0
	}
	if v := r.URL.Query().Get("percent"); v != "" {
		p, err := strconv.ParseFloat(v, 64)
		return int(float64(len(s.nodes)) * p / 100), err == nil && p > 0
	}
	return 0, false
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
