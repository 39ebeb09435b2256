//go:build !race

package difftest

// raceSlowdown: see race_test.go.
const raceSlowdown = 1
