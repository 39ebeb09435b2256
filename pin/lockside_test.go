package pin

import (
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/examplesnap"
)

func TestDetectFile(t *testing.T) {
	lock := mustMarshal(t, tofuLock(t, "honest"))
	snap, _ := examplesnap.Live(t, "honest").MarshalFile()
	tests := []struct {
		data string
		want FileKind
	}{
		{string(lock), FileLock},
		{string(snap), FileSnapshot},
		{`{"tools":[]}`, FileSnapshot},
		{`{"resourceTemplates":[]}`, FileSnapshot},
		{`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`, FileBundle},
		{`{"kind":"other"}`, FileUnknown},
		{`{"tools":5}`, FileUnknown},
		{`node server.js`, FileUnknown},
		{``, FileUnknown},
	}
	for _, tc := range tests {
		if got := DetectFile([]byte(tc.data)); got != tc.want {
			t.Errorf("DetectFile(%.40q) = %v, want %v", tc.data, got, tc.want)
		}
	}
}
