package pin

// The findings of a lock that does not satisfy its server's policy
// (docs/POLICY.md "The lock in force"): the policy package decides them,
// the proxy enforces the part it can without the verifier (it links no
// Sigstore code). Each blocks under every mode and --fail-on.
const (
	// RulePolicyLockMethodRefused: the lock's approval method is one the
	// policy does not allow (tofu under "unsigned": "refuse"; manual when
	// neither "rollForward": "manual" nor "unsigned": "tofu" asks for a
	// person's approval).
	RulePolicyLockMethodRefused = "policy-lock-method-refused"
	// RulePolicyLockSignerUnlisted: the lock is signed by a signer that none
	// of the policy's identities names.
	RulePolicyLockSignerUnlisted = "policy-lock-signer-unlisted"
	// RulePolicyLockUnproven: the lock's record names a listed signer but
	// cannot show all the policy requires (a threshold above 1, workflow
	// claims, several certificate criteria), and re-verifying the bundle
	// it records did not prove it either.
	RulePolicyLockUnproven = "policy-lock-unproven"
)
