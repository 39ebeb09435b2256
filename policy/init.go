package policy

// initTemplate is what 'mcpsign policy init' writes: JSON has no comments,
// so the guidance is in "$comment" members, which the reader ignores. Its
// one server is blocked until an identity is filled in (or "unsigned" set
// to "tofu"): a starting point never trusts anything by itself.
const initTemplate = `{
  "kind": "mcpsign.policy",
  "policyVersion": 1,
  "$comment": [
    "mcpsign policy file (docs/POLICY.md). Relative paths are relative to this file.",
    "Check it with: mcpsign policy check FILE. Use it with: mcpsign proxy --policy FILE --name NAME -- SERVER...",
    "Unknown members are refused: a misspelt restriction never loosens the policy."
  ],
  "trust": {
    "$comment": "Sigstore trusted_root.json (or tuf), and enterprise CA roots for the certificate method. Empty: the public-good root through TUF.",
    "tuf": {}
  },
  "defaults": {
    "$comment": "Applies to every server that does not give the member itself. mode: block|warn|audit; unsigned: refuse|tofu; rollForward: signed|manual.",
    "mode": "block",
    "unsigned": "refuse",
    "rollForward": "signed"
  },
  "servers": {
    "example": {
      "$comment": [
        "Rename to the server's name. Blocked until an identity is added, for example",
        "{\"method\": \"sigstore\", \"issuer\": \"https://token.actions.githubusercontent.com\", \"subject\": \"https://github.com/OWNER/REPO/.github/workflows/release.yml@refs/tags/v1.0.0\"}",
        "or {\"method\": \"key\", \"key\": \"keys/publisher.pub.pem\"}; threshold k needs k distinct identities to have signed."
      ],
      "identities": [],
      "bundle": "server"
    }
  },
  "revoked": {
    "$comment": "sha256: digests of bundles and definitions, and signer identities, that approve nothing any more.",
    "bundles": [],
    "definitions": [],
    "identities": []
  }
}
`

// InitTemplate returns the starting-point policy 'mcpsign policy init'
// writes: valid, commented with "$comment" members, trusting nothing.
func InitTemplate() []byte { return []byte(initTemplate) }
