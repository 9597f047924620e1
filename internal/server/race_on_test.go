//go:build race

package server

// raceEnabled: the test binary was built with -race (tests that run many
// seeded rounds run fewer: the detector slows them five to tenfold).
const raceEnabled = true
