// Package digest computes the mcpsign Definition Digest v1 of MCP tool, prompt
// and resource-template definitions, the Set Digest per kind, and the
// Instructions Digest, and models the Snapshot that a source yields.
//
// The recipe is normative (docs/DIGEST.md) and agrees with the client-held
// pinning draft:
//
//  1. Take one definition object exactly as received on the wire.
//  2. Parse it strictly: invalid UTF-8, lone or reversed surrogates, a
//     repeated member name at any depth, a number token outside RFC 8259,
//     and any number whose magnitude is at least 2^53 are refused.
//  3. Remove the top-level member "_meta" (and only that one).
//  4. Serialize with RFC 8785 (JCS) and take SHA-256; the digest is
//     "sha256:" followed by lowercase hex.
//
// A definition that cannot be digested is reported with its kind, key and
// the JSON pointer of the offending value; it never silently drops out of a
// set. Of mcpsign it imports only internal/jsonscan, its structural scanner.
package digest
