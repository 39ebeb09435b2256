// Package cputime gives benchmarks the CPU time of their process, which,
// unlike the wall clock, does not count the time spent waiting for a core
// that the machine's other work holds (docs/PERFORMANCE.md).
package cputime
