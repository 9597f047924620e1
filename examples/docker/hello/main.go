// Command hello is the example container of examples/docker.nomad.hcl: a
// static HTTP server (no libc, so it runs in a FROM-scratch image) that
// answers every request with where it runs. It listens on $PORT (8080 by
// default).
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	host, _ := os.Hostname()
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s (alloc %s) pid=%d\n", host, os.Getenv("NOMAD_ALLOC_ID"), os.Getpid())
	})
	log.Printf("listening on :%s", port)
	log.Fatal(http.ListenAndServe(":"+port, nil))
}
