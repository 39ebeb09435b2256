//go:build race

package source

// raceBuild: this test binary is race-instrumented, and so is every program
// it runs as (fixtures.Executable).
const raceBuild = true
