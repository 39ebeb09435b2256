// Package capability classifies what each tool can do: read, write,
// delete, network, exec, or unknown when nothing says (docs/DRIFT.md,
// "Capabilities"). These are a tool's own capabilities, computed from its
// definition; they are not the MCP client or server capabilities of the
// initialize handshake.
//
// Classify reads one raw tool definition: its annotations first
// (readOnlyHint, destructiveHint, openWorldHint), then the words of its
// name, then those of its title and description, and records for every
// capability the Source that gave it. Overrides (a caps.json file,
// ParseOverrides, or a lock's "capabilities" member) replace the computed
// set of the tools they name. Delete and exec are Dangerous: gaining one is
// the drift error pin-capability-added of package pin.
//
// Text that came from a server is kept raw in these values and in what
// Describe and SourcesText return (for a message escaped where it is
// printed), and escaped with internal/textsafe by WriteText.
package capability
