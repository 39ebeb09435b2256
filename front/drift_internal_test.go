package front

import "testing"

// TestClientDependent: which refusals say nothing of the server having
// changed (a listing that depends on the client's capabilities), and so do
// not mark the upstream drifted.
func TestClientDependent(t *testing.T) {
	for _, tc := range []struct {
		name     string
		findings []string
		want     bool
	}{
		{"added for a client with other capabilities", []string{"pin-client-capabilities-differ", "pin-tool-added tool/x", "pin-capability-added tool/x"}, true},
		{"missing for a client with other capabilities", []string{"pin-client-capabilities-differ", "pin-prompt-removed prompt/p"}, true},
		{"a locked tool changed", []string{"pin-client-capabilities-differ", "pin-tool-added tool/run_command", "pin-tool-changed tool/search_notes", "pin-hidden-characters tool/search_notes"}, false},
		{"hidden characters in a locked tool", []string{"pin-client-capabilities-differ", "pin-hidden-characters tool/search_notes"}, false},
		{"added under the lock's capabilities", []string{"pin-tool-added tool/x"}, false},
		{"nothing but the capabilities", []string{"pin-client-capabilities-differ"}, false},
		{"another process changed the lock", []string{"pin-lock-changed-by-another-process", "pin-client-capabilities-differ", "pin-tool-added tool/x"}, false},
	} {
		if got := clientDependent(tc.findings); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
