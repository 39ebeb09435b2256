// Package monitor follows a transparency log for a publisher: it verifies
// the log's latest checkpoint with the log key of a trusted root, proves it
// consistent with the checkpoint of the previous run (one proof a run),
// reads every entry added since, proven part of the tree, and reports each
// entry whose certificate matches a watched identity (or whose key is a
// watched key) and whose artifact is not one the publisher released. The
// state it keeps between runs is the last checkpoint checked.
//
// Rekor v2 logs are read as tlog-tiles (entry bundles and hash tiles),
// Rekor v1 logs through github.com/sigstore/rekor's generated client.
// Formats, findings, how entries are read and the workflow that runs it on
// a schedule are in docs/MONITOR.md.
package monitor
