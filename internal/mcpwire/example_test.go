package mcpwire_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
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
	// refused: protocol error: invalid JSON-RPC message at byte 45: result member "Tools" would be read as "tools" by a case-insensitive reader; the server wrote …"result":{"tools":[],"Tools":[{"name":"x"}]}}"
	// the answer to tools/list, with tools: true
}

// A Streamable HTTP client reads the response to each POSTed request
// strictly: server requests and notifications before the answer are
// relayed as they come, the answer only once the stream ended cleanly.
func ExampleReadResponse() {
	request := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	check, err := mcpwire.NewPostCheck(request)
	if err != nil {
		panic(err)
	}
	header := http.Header{"Content-Type": {"text/event-stream"}}
	kind, err := mcpwire.ReadContentType(header)
	if err != nil {
		panic(err)
	}
	body := io.NopCloser(strings.NewReader("" +
		"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\r\n\r\n" +
		"id: 2\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\r\n\r\n"))
	held, err := mcpwire.ReadResponse(context.Background(), kind, body, check, mcpwire.ResponseOptions{},
		func(msg []byte) error {
			fmt.Printf("relayed now: %s\n", msg)
			return nil
		})
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	for _, msg := range held {
		fmt.Printf("then: %s\n", msg)
	}

	// A lone CR: the TypeScript SDK would end the line there, go-sdk not.
	check, _ = mcpwire.NewPostCheck(request)
	body = io.NopCloser(strings.NewReader("data: {\"jsonrpc\":\"2.0\",\"id\":1,\r\"result\":{}}\n\n"))
	_, err = mcpwire.ReadResponse(context.Background(), kind, body, check, mcpwire.ResponseOptions{}, func([]byte) error { return nil })
	fmt.Println("refused:", err)
	// Output:
	// relayed now: {"jsonrpc":"2.0","method":"notifications/message","params":{}}
	// then: {"jsonrpc":"2.0","id":1,"result":{"tools":[]}}
	// refused: event stream line 1: a CR that is not part of a CRLF line end (the TypeScript SDK ends the line there, go-sdk does not)
}
