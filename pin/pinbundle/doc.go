// Package pinbundle connects Sigstore bundles to pins: the approval a
// successful verification stands for ([ApprovalOf]), a proxy verifier that
// verifies a bundle file whenever the proxy meets definitions its lock does
// not hold ([Verifier]), and a bundle's statement read for a diff without
// verifying it ([Statement], [ReadSideFile]).
//
// It is apart from packages pin (the lock, the drift rules), pin/diff and
// pin/capability so that they and package proxy do not link sigstore-go:
// the long-running proxy executable stays small, and verification runs
// where it is needed.
package pinbundle
