// Package diff compares two sides of a server field by field: what a live
// server, a snapshot file, a lock (pin.LockSide) or a bundle's statement
// (an unverified claim) says the server offers (docs/DRIFT.md, "mcpsign
// diff").
//
// Compare matches definitions by kind and key and reports every one added,
// removed or changed, with the top-level members that changed and their
// text diffs (Text, bounded by Options), the capabilities each tool has on
// either side (package pin/capability) and the breaking changes: a removed
// definition or parameter, a newly required parameter, a parameter type
// changed, a tool that gained delete or exec, a text that gained hidden
// characters. Package pin draws its drift findings from a Result; FailOn
// says when the diff command fails.
//
// Text that came from a server is kept raw in a Result and escaped with
// internal/textsafe by WriteText (and FieldChange.WriteText); WriteJSON
// leaves escaping to JSON.
package diff
