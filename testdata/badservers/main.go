// Command badservers is a stdio "MCP server" that misbehaves in one chosen
// way, for testing how clients fail. It writes raw JSON-RPC lines itself (no
// SDK), so the bytes on the wire are exactly the ones written here.
//
// Usage: badservers --behavior NAME
//
// Unless its behavior says otherwise, the server speaks just enough of the
// 2025-11-25 handshake: it answers server/discover (and any other unknown
// method) with JSON-RPC error -32601, so a 2026-07-28 client falls back to
// initialize; it answers initialize with protocolVersion "2025-11-25",
// capabilities {"tools":{}} and serverInfo {"name":"mcpsign-badserver",
// "version":"0.0.1"}; it ignores notifications; it answers ping with {} and
// prompts/list, resources/list and resources/templates/list with empty lists;
// and it exits when stdin closes. The behaviors:
//
//	never-answers        reads stdin, never writes; exits when stdin closes
//	never-exits          like never-answers, but ignores the end of stdin,
//	                     SIGINT, SIGTERM and SIGHUP (only SIGKILL stops it; it gives
//	                     up by itself after two minutes so it cannot linger)
//	exits-at-once        writes a line to stderr and exits with status 3 at once
//	bad-jsonrpc          answers initialize with a line that is not JSON
//	bad-jsonrpc-version  answers initialize with "jsonrpc":"1.0"
//	error-on-list        tools/list answers JSON-RPC error -32603
//	hangs-on-list        never answers tools/list
//	non-string-cursor    tools/list answers one good tool and "nextCursor":5
//	invalid-definitions  tools/list answers, raw: a tool with a repeated member
//	                     name ("description" twice), one with invalid UTF-8 in
//	                     its description, one with the number 1e20 in its
//	                     schema, two tools both named "dup", and one good tool
//	                     ("good")
//	no-key               tools/list answers a tool without a name and a good one
//	non-string-key       tools/list answers a tool whose name is the number 7
//	                     and a good one
//	flood-pages          tools/list answers every page with one new tool of
//	                     15 MiB and a nextCursor, without end
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// behaviors lists every --behavior value.
var behaviors = []string{
	"never-answers", "never-exits", "exits-at-once", "bad-jsonrpc", "bad-jsonrpc-version",
	"error-on-list", "hangs-on-list", "non-string-cursor", "invalid-definitions", "no-key", "non-string-key", "flood-pages",
}

// Raw result bodies.
const (
	initializeResult = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},` +
		`"serverInfo":{"name":"mcpsign-badserver","version":"0.0.1"}}`
	goodTool = `{"name":"good","description":"A well-formed tool.","inputSchema":{"type":"object"}}`

	// neverExitsLimit bounds how long never-exits lingers.
	neverExitsLimit = 2 * time.Minute
)

// toolsListResults maps a behavior to its raw tools/list result, for the
// behaviors whose tools/list answers a result.
var toolsListResults = map[string]string{
	"non-string-cursor": `{"tools":[` + goodTool + `],"nextCursor":5}`,
	"invalid-definitions": `{"tools":[` +
		`{"name":"a","description":"x","description":"y","inputSchema":{"type":"object"}},` +
		`{"name":"bad_utf8","description":"invalid ` + "\xff\xfe" + ` bytes","inputSchema":{"type":"object"}},` +
		`{"name":"big_number","description":"A number beyond 2^53.","inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1e20}}}},` +
		`{"name":"dup","description":"First of two tools named dup.","inputSchema":{"type":"object"}},` +
		`{"name":"dup","description":"Second of two tools named dup.","inputSchema":{"type":"object"}},` +
		goodTool + `]}`,
	"no-key":         `{"tools":[{"description":"A tool without a name.","inputSchema":{"type":"object"}},` + goodTool + `]}`,
	"non-string-key": `{"tools":[{"name":7,"description":"A tool whose name is a number.","inputSchema":{"type":"object"}},` + goodTool + `]}`,
}

func main() {
	fs := flag.NewFlagSet("badservers", flag.ContinueOnError)
	behavior := fs.String("behavior", "", "how to misbehave: "+strings.Join(behaviors, ", "))
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if !slices.Contains(behaviors, *behavior) {
		fmt.Fprintf(os.Stderr, "badservers: unknown --behavior %q (want one of %s)\n", *behavior, strings.Join(behaviors, ", "))
		os.Exit(2)
	}
	if err := run(*behavior, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "badservers: %s: %v\n", *behavior, err)
		os.Exit(1)
	}
}

// run misbehaves as behavior says, reading requests from in and writing
// responses to out.
func run(behavior string, in io.Reader, out, stderr io.Writer) error {
	switch behavior {
	case "exits-at-once":
		fmt.Fprintln(stderr, "badservers: exits-at-once: giving up before the handshake")
		os.Exit(3)
	case "never-answers":
		if _, err := io.Copy(io.Discard, in); err != nil {
			return fmt.Errorf("reading stdin: %w", err)
		}
		return nil
	case "never-exits":
		signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		_, _ = io.Copy(io.Discard, in)
		time.Sleep(neverExitsLimit)
		return nil
	}
	return serve(behavior, in, out)
}

// request is the part of an incoming JSON-RPC message the server looks at.
type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// serve answers requests line by line until in ends.
func serve(behavior string, in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if werr := answer(behavior, line, out); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading stdin: %w", err)
		}
	}
}

// answer writes the response to one incoming line, if any.
func answer(behavior string, line []byte, out io.Writer) error {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return write(out, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`)
	}
	if len(req.ID) == 0 || string(req.ID) == "null" {
		return nil // a notification
	}
	id := string(req.ID)
	result := func(body string) error {
		return write(out, `{"jsonrpc":"2.0","id":`+id+`,"result":`+body+`}`)
	}
	rpcError := func(code int, msg string) error {
		return write(out, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q}}`, id, code, msg))
	}
	switch req.Method {
	case "initialize":
		switch behavior {
		case "bad-jsonrpc":
			return write(out, `this is not JSON-RPC {"jsonrpc":`)
		case "bad-jsonrpc-version":
			return write(out, `{"jsonrpc":"1.0","id":`+id+`,"result":`+initializeResult+`}`)
		}
		return result(initializeResult)
	case "ping":
		return result(`{}`)
	case "tools/list":
		switch behavior {
		case "error-on-list":
			return rpcError(-32603, "internal error: the tools are unavailable")
		case "hangs-on-list":
			return nil
		case "flood-pages":
			// A page of 15 MiB, under the 16 MiB message cap; the tool's
			// name follows the cursor so that every page is new.
			var cursor struct {
				Params struct {
					Cursor string `json:"cursor"`
				} `json:"params"`
			}
			json.Unmarshal(line, &cursor)
			n := len(cursor.Params.Cursor)
			desc := strings.Repeat("x", 15<<20)
			return result(fmt.Sprintf(`{"tools":[{"name":"t%d","description":"%s","inputSchema":{"type":"object"}}],"nextCursor":"%sc"}`, n, desc, cursor.Params.Cursor))
		}
		if body, ok := toolsListResults[behavior]; ok {
			return result(body)
		}
		return result(`{"tools":[` + goodTool + `]}`)
	case "prompts/list":
		return result(`{"prompts":[]}`)
	case "resources/list":
		return result(`{"resources":[]}`)
	case "resources/templates/list":
		return result(`{"resourceTemplates":[]}`)
	}
	return rpcError(-32601, "method not found: "+req.Method)
}

// write writes one message line.
func write(out io.Writer, msg string) error {
	if _, err := io.WriteString(out, msg+"\n"); err != nil {
		return fmt.Errorf("writing stdout: %w", err)
	}
	return nil
}
