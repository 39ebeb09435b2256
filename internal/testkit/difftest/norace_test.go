//go:build !race

package difftest

// raceSlowdown, raceBuilt: see race_test.go.
const (
	raceSlowdown = 1
	raceBuilt    = false
)
