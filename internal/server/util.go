package server

import (
	"math/rand/v2"
	"strconv"

	"github.com/google/uuid"
)

func newID() string { return uuid.NewString() }

func rnd(n int64) int64 {
	if n <= 0 {
		return 0
	}
	return rand.Int64N(n)
}

func itoa(i int) string { return strconv.Itoa(i) }
