package front

import (
	"bytes"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var decodeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`,
	`{"jsonrpc":"2.0","id":"a-1","result":{}}`,
	`{"jsonrpc":"2.0","id":7,"result":null}`,
	`{"jsonrpc":"2.0","id":2.0,"result":{"tools":[]}}`,
	`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no","data":{"x":1}}}`,
	`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`,
	`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[]}}`,
	`{"jsonrpc":"2.0","id":null,"result":{}}`,
	`{"id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":"\u0061","result":{"a":"\u00e9"}}`,
	// ids go-sdk reads as a float64 truncated to int64 (mcpwire.IDValue)
	`{"jsonrpc":"2.0","id":1.9,"result":{}}`,
	`{"jsonrpc":"2.0","id":-0,"result":{}}`,
	`{"jsonrpc":"2.0","id":9007199254740993,"result":{}}`,
	`{"jsonrpc":"2.0","id":1e300,"result":{}}`,
	`{"jsonrpc":"2.0","id":1e400,"result":{}}`,
	`{"jsonrpc":"2.0","id":"\ud83d\ude00","method":"ping"}`,
}

// TestDecodeChecked: the front's decoder of what the relay let through
// gives go-sdk the message go-sdk's own decoder gives (the same wire form),
// and refuses what it refuses.
func TestDecodeChecked(t *testing.T) {
	for _, s := range decodeSeeds {
		sameAsSDK(t, []byte(s))
	}
}

func FuzzDecodeChecked(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameAsSDK(t, data) })
}

func sameAsSDK(t *testing.T, data []byte) {
	t.Helper()
	want, werr := jsonrpc.DecodeMessage(data)
	got, gerr := decodeChecked(data)
	if werr != nil {
		if gerr == nil {
			// mcpwire's reader accepted what go-sdk's refuses: only where
			// go-sdk is stricter about what it need not be (none known).
			t.Errorf("%s: go-sdk refuses (%v), decodeChecked accepts", data, werr)
		}
		return
	}
	if gerr != nil {
		t.Errorf("%s: go-sdk accepts, decodeChecked refuses: %v", data, gerr)
		return
	}
	wb, err1 := jsonrpc.EncodeMessage(want)
	gb, err2 := jsonrpc.EncodeMessage(got)
	if err1 != nil || err2 != nil || !bytes.Equal(wb, gb) {
		t.Errorf("%s:\n go-sdk   %s (%v)\n decoded  %s (%v)", data, wb, err1, gb, err2)
	}
}
