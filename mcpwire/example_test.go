package mcpwire_test

import (
	"fmt"

	"github.com/mcpsign/mcpsign/mcpwire"
)

// A reader of a server's messages ties each answer to its request by the
// exact bytes of the id, and refuses what a client could read otherwise.
func Example() {
	var pending mcpwire.Pending[string]
	pending.Add([]byte("1"), "tools/list")

	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1.0,"result":{"tools":[]}}`,                      // go-sdk and the TypeScript SDK read id 1
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[],"Tools":[{"name":"x"}]}}`, // encoding/json reads "Tools"
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`,
	} {
		m, err := mcpwire.ParseFromServer([]byte(line))
		if err != nil {
			fmt.Println("refused:", err)
			continue
		}
		method, err := pending.Take(m.ID)
		if err != nil {
			fmt.Println("refused:", err)
			continue
		}
		fmt.Printf("the answer to %s, with tools: %v\n", method, m.Lists&mcpwire.HasTools != 0)
	}
	// Output:
	// refused: a response with id 1.0 answers no pending request (the TypeScript SDK and go-sdk would take it for the answer to request 1)
	// refused: protocol error: invalid JSON-RPC message at byte 45: result member "Tools" would be read as "tools" by a case-insensitive reader
	// the answer to tools/list, with tools: true
}
