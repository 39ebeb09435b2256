// Package inittrace holds the test that reads the Go runtime's trace of
// package initialization (GODEBUG=inittrace=1) of one offline
// `mcpsign verify bundle` and of the minimal sigstore-go verifier
// (scripts/bench/minimal-verifier): no mcpsign package may do work at start,
// and no other package may do work at start that the minimal verifier does
// not also do, beyond an allowlist that says why (docs/PERFORMANCE.md,
// "Start-up: no work in package initializers").
package inittrace
