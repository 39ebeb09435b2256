package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/pin"
	"github.com/mcpsign/mcpsign/verify"
)

// The findings of a lock that does not satisfy its server's policy
// (docs/POLICY.md "The lock in force"), as pin names them: each blocks, at
// start and at adoption, under every mode and --fail-on.
const (
	RuleLockMethodRefused  = pin.RulePolicyLockMethodRefused
	RuleLockSignerUnlisted = pin.RulePolicyLockSignerUnlisted
	RuleLockUnproven       = pin.RulePolicyLockUnproven
)

// MethodTOFU and MethodManual are the lock approval methods that are no
// signature (docs/LOCK.md "approval").
const (
	MethodTOFU   = pin.MethodTOFU
	MethodManual = pin.MethodManual
)

// LockError is a lock that does not satisfy the policy: Rule is one of the
// RuleLock* findings, Reason says why (not escaped), and Err, when set, is
// the cause Reason includes (why re-verifying the lock failed).
type LockError struct {
	Rule   string
	Reason string
	Err    error
}

func (e *LockError) Error() string { return e.Reason + " (" + e.Rule + ")" }

func (e *LockError) Unwrap() error { return e.Err }

// CheckApproval decides, from a lock's record of its approval alone (its
// method, the signer's identity, a key's ID for the key method, and the
// OIDC issuer of a keyless certificate: docs/LOCK.md "approval"), whether it
// satisfies the server's policy: nil when it does; a *LockError with
// RuleLockMethodRefused or RuleLockSignerUnlisted when it cannot; a
// *LockError with RuleLockUnproven when the record names a listed signer
// but does not hold all the policy requires, so that only re-verifying the
// bundle it records can decide (docs/POLICY.md "The lock in force").
//
// A record is not a proof: anything that can write the lock can write it
// (docs/LOCK.md "Where to keep a lock"). CheckApproval keeps a lock made
// under another policy, or by trust on first use, from standing under
// this one; nil for a signed method means only that the record names a
// listed signer: such a lock is in force only once a bundle verifies its
// definitions under the policy and is the bundle it records
// (docs/POLICY.md "The lock in force").
func (r *Resolved) CheckApproval(a pin.Approval) error {
	refuse := func(rule, format string, args ...any) error {
		return &LockError{Rule: rule, Reason: fmt.Sprintf(format, args...)}
	}
	switch a.Method {
	case MethodTOFU:
		if r.Unsigned != UnsignedTOFU {
			return refuse(RuleLockMethodRefused, "the lock was trusted on first use (tofu), and the policy of server %s refuses unsigned servers (\"unsigned\": %s)", textsafe.RawQuote(r.Name), textsafe.RawQuote(string(r.Unsigned)))
		}
		return nil
	case MethodManual:
		if r.RollForward != RollForwardManual && r.Unsigned != UnsignedTOFU {
			return refuse(RuleLockMethodRefused, "the lock was approved manually, and the policy of server %s approves only signed definitions (\"rollForward\": %s, \"unsigned\": %s)", textsafe.RawQuote(r.Name), textsafe.RawQuote(string(r.RollForward)), textsafe.RawQuote(string(r.Unsigned)))
		}
		return nil
	}
	if !a.Method.Valid() {
		return refuse(RuleLockMethodRefused, "the lock's approval method %s is none the policy knows", textsafe.RawQuote(string(a.Method)))
	}
	signer := string(a.Method) + " " + textsafe.RawQuote(a.Identity)
	if a.Issuer != "" {
		signer += " (issuer " + textsafe.RawQuote(a.Issuer) + ")"
	}
	var unproven []string
	found := false
	for i, id := range r.Identities {
		if id.Method != a.Method {
			continue
		}
		ok, missing := id.matchesRecord(a)
		switch {
		case !ok:
		case missing != "":
			unproven = append(unproven, fmt.Sprintf("identity %d also requires %s", i, missing))
		default:
			found = true
		}
	}
	switch {
	case !found && len(unproven) == 0:
		return refuse(RuleLockSignerUnlisted, "the lock is signed by %s, which none of the %d identities of server %s names", signer, len(r.Identities), textsafe.RawQuote(r.Name))
	case !found:
		return refuse(RuleLockUnproven, "the lock is signed by %s, but records no more than that: %s", signer, strings.Join(unproven, "; "))
	case r.Threshold > 1:
		return refuse(RuleLockUnproven, "the lock records one signer, %s; the policy of server %s requires %d distinct ones", signer, textsafe.RawQuote(r.Name), r.Threshold)
	case a.Method == evidence.MethodCertificate && slices.ContainsFunc(r.Revoked.Identities, digest.ValidDigest):
		// A revoked key refuses a certificate issued for it too, but the
		// lock records the certificate's identity, not its key. (A
		// sigstore certificate's key is made for one signing.)
		return refuse(RuleLockUnproven, "the lock is signed by %s; the policy revokes key IDs, and a certificate lock does not record the key that signed", signer)
	}
	return nil
}

// matchesRecord reports whether a lock's record of a signature by id's
// method can be id's signer, and, when it can, what id requires that the
// record does not show ("" when the record decides).
func (id Identity) matchesRecord(a pin.Approval) (ok bool, missing string) {
	v := id.Identity
	switch id.Method {
	case evidence.MethodKey:
		// Read loads the key; a File from Parse alone has no key ID.
		if id.KeyID == "" {
			return true, "its key file " + textsafe.RawQuote(id.Key) + " to be read"
		}
		return a.Identity == id.KeyID, ""
	case evidence.MethodSigstore:
		if !exactOrRe(a.Issuer, v.Issuer, v.IssuerRegexp) || !exactOrRe(a.Identity, v.SAN, v.SANRegexp) {
			return false, ""
		}
		var claims []string
		for _, c := range [][2]string{{"sourceRepository", v.GitHubWorkflowRepository}, {"sourceRef", v.GitHubWorkflowRef},
			{"workflowSha", v.GitHubWorkflowSHA}, {"workflowTrigger", v.GitHubWorkflowTrigger}, {"workflowName", v.GitHubWorkflowName}} {
			if c[1] != "" {
				claims = append(claims, c[0])
			}
		}
		if len(claims) > 0 {
			return true, "the certificate's " + strings.Join(claims, ", ") + " (a lock records the subject and issuer only)"
		}
		return true, ""
	}
	// The certificate method: the lock records the SAN of the first SAN
	// criterion (san, then e-mail, URI, DNS: verify's order), else the
	// subject DN. URIs compare exactly here (verify folds the case of a
	// scheme and host): a lock verify wrote records the certificate's own.
	crits := []struct {
		name string
		set  bool
		ok   func(string) bool
	}{
		{"san", v.SAN != "" || v.SANRegexp != "", func(s string) bool { return exactOrRe(s, v.SAN, v.SANRegexp) }},
		{"email", v.Email != "", func(s string) bool { return s == v.Email }},
		{"uri", v.URI != "", func(s string) bool { return s == v.URI }},
		{"dns", v.DNS != "", func(s string) bool { return s == v.DNS }},
		{"subject", v.Subject != "", func(s string) bool { return s == v.Subject }},
	}
	first := -1
	var more []string
	for i, c := range crits {
		switch {
		case !c.set:
		case first < 0:
			first = i
		default:
			more = append(more, c.name)
		}
	}
	if first < 0 || !crits[first].ok(a.Identity) {
		// (first < 0: no criterion the lock records; the parser refuses
		// such an identity.)
		return false, ""
	}
	if v.Issuer != "" {
		more = append(more, "issuer")
	}
	if len(more) > 0 {
		return true, "the certificate's " + strings.Join(more, ", ") + " (a lock records one identity)"
	}
	return true, ""
}

// exactOrRe reports whether s equals exact, or matches re as a whole (the
// anchoring verify uses); an empty criterion holds.
func exactOrRe(s, exact, re string) bool {
	if exact != "" && s != exact {
		return false
	}
	if re != "" {
		rx, err := verify.CompileAnchored(re)
		if err != nil || !rx.MatchString(s) {
			return false
		}
	}
	return true
}
