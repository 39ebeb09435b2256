//go:build race

package difftest

// raceSlowdown scales the proxy's and the clients' short timeouts in these
// tests: this test binary is race-instrumented (the proxy in process, and
// mcpsign proxy, which it runs as), and starts and answers several times
// slower. At 1x, honest servers missed the 2 s start-up check under -race
// beside the other packages' parallel tests (CI).
const raceSlowdown = 3

// raceBuilt says this test binary is race-instrumented (serverExe).
const raceBuilt = true
