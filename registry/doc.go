// Package registry verifies MCP registry entries (docs/REGISTRY.md): it
// reads server.json documents, registry API pages and dumps strictly and
// within bounds, finds the bundles an entry points at
// (_meta["io.modelcontextprotocol.registry/publisher-provided"]["dev.mcpsign/attestation"]),
// fetches them (https only, bounded, digest checked before anything
// parses them), verifies them under a policy whose server names may match
// registry namespaces, and checks that the statement binds what the entry
// installs: every packages[] entry and the entry's version; a member that
// decides what is installed, how it starts, with what environment or where
// a host connects and that no statement binds refuses the entry
// (members.go). Every refusal names the entry's position in the source and
// the member's JSON Pointer. Verification
// streams: memory stays flat in the number of entries, bundles are
// verified in parallel with one trusted material load.
package registry
