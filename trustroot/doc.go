// Package trustroot loads the trusted material mcpsign verifies against: a
// Sigstore trusted_root.json file, the public-good root through sigstore-go's
// TUF client (cached, and strictly offline on request), enterprise x509 PKI
// roots and intermediates, and public keys. It creates trusted_root.json
// files from PEM material, describes them, and wraps trusted material in a
// cache of the constant part of certificate path validation
// (WithChainCache).
package trustroot
