// Package monitor follows a transparency log for a publisher: it verifies
// the log's latest checkpoint with the log key of a trusted root, proves it
// consistent with the checkpoint of the previous run, reads every entry
// added since (one entry bundle at a time, each proven part of the tree),
// and reports each entry whose certificate matches a watched identity (or
// whose key is a watched key) and whose artifact is not one the publisher
// released. The state it keeps between runs is the last checkpoint checked.
//
// Formats, findings and the workflow that runs it on a schedule are in
// docs/MONITOR.md. Only Rekor v2 (tlog-tiles) logs are read.
package monitor
