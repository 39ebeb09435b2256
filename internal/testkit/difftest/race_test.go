//go:build race

package difftest

// raceSlowdown scales the proxy's and the clients' short timeouts in these
// tests: this test binary is race-instrumented, and so is every fixture
// server it runs as (fixtures.Executable), which then starts and answers
// several times slower. At 1x, honest servers missed the 2 s start-up check
// under -race beside the other packages' parallel tests (CI).
const raceSlowdown = 3
