// Package options holds the flag groups of the mcpsign commands, one struct
// per group with an AddFlags method, in the style of cosign's cli/options:
// a group that several commands share (the source, the trust root, the
// signer identity policy) is defined once and added to each of them.
package options
