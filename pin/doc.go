// Package pin keeps what a host approved and blocks any later change to it.
//
// After a server's definitions were verified (or, on request, trusted on
// first use), a Lock records every approved definition with its digest, the
// server, protocol version and instructions, any capability overrides and
// the evidence of the approval, sealed by its own lockDigest so that a
// hand-edited lock is refused. The lock format is normative (docs/LOCK.md):
// NewLock builds one, Read and Parse read one strictly, Write, Create and
// Update write one atomically under a file lock.
//
// (*Lock).Check compares a live Snapshot to the lock with the drift rules of
// docs/DRIFT.md (pin-tool-added, pin-tool-changed, pin-capability-added…)
// and returns a Report, drawn from a comparison of package pin/diff (the
// lock's side is LockSide); (*Lock).ToolCapabilities says what each pinned
// tool can do (package pin/capability) with the lock's overrides applied;
// CheckRollForward and SameSigner say whether a signed update may replace
// the approval a lock holds (docs/DRIFT.md).
//
// Text that came from a server is kept raw in these values and escaped by
// the report writers (WriteReportText, WriteReportMarkdown; WriteReportJSON
// leaves escaping to JSON) with internal/textsafe before it is shown.
package pin
