package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpsign/mcpsign/internal/mcpwire"
	"github.com/mcpsign/mcpsign/internal/textsafe"
)

// Blocking a session, and the answers of the proxy's own (docs/PROXY.md,
// "Blocking").

// block stops the session: every held and in-flight request is answered
// with an error, the held server messages are dropped, the server is
// stopped and the report written.
func (r *relay) block(b *BlockedError) {
	if r.blocked != nil {
		return
	}
	r.blocked = b
	msg, data := UncheckedMessage, map[string]any{"reason": b.What}
	if b.Decision != nil {
		msg = BlockedMessage
		if b.Decision.FirstUse {
			msg = FirstUseMessage
		}
		if len(b.Decision.Findings) > 0 {
			data["findings"] = b.Decision.Findings
		}
	}
	r.blockMsg, r.blockData = msg, data
	if b.subjectID != nil {
		r.answer(b.subjectID, BlockedCode, msg, data)
	}
	if t := r.running; t != nil && t.subjID != nil && !bytes.Equal(t.subjID, b.subjectID) {
		// The request whose held answer a running check is about is
		// answered here: the check's own end finds the session blocked
		// and answers nothing.
		r.answer(t.subjID, BlockedCode, msg, data)
	}
	r.pending.Drain(func(id []byte, _ *pendingReq) {
		r.answer(id, BlockedCode, msg, data)
	})
	r.listsInFlight = 0
	for _, m := range r.heldClient {
		if m.perr == nil && !m.blank && m.env.Kind == mcpwire.KindRequest {
			r.answer(m.env.ID, BlockedCode, msg, data)
		}
	}
	r.heldClient, r.heldServer, r.heldBytes = nil, nil, 0
	r.toServer.drop() // not even what was decided a moment ago goes out
	r.stopped = make(chan struct{})
	go func() {
		r.c.Stop(r.o.ShutdownGrace)
		close(r.stopped)
		r.signal()
	}()
	r.report(b)
	r.event(Event{Kind: EventBlocked, Decision: b.Decision, Err: b.Err, What: b.What})
}

// interrupted ends a session the proxy's caller cancelled (SIGINT, SIGTERM):
// every request still waiting for the server is answered with
// InterruptedCode, so that no client waits for an answer that cannot come,
// and stderr says why the server is stopped.
func (r *relay) interrupted(cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.blocked != nil {
		return // every request is answered already
	}
	why := cause.Error()
	if !strings.HasPrefix(why, "interrupted") {
		why = "interrupted (" + why + ")"
	}
	msg := "mcpsign proxy: " + textsafe.Escape(why) + ": " + r.stoppedText()
	if t := r.running; t != nil && t.subjID != nil {
		r.answer(t.subjID, InterruptedCode, msg, nil)
	}
	r.pending.Drain(func(id []byte, _ *pendingReq) {
		r.answer(id, InterruptedCode, msg, nil)
	})
	for _, m := range r.heldClient {
		if m.perr == nil && !m.blank && m.env.Kind == mcpwire.KindRequest {
			r.answer(m.env.ID, InterruptedCode, msg, nil)
		}
	}
	r.heldClient, r.heldServer, r.heldBytes = nil, nil, 0
	r.toServer.drop()
	r.stderr(msg+"\n", true)
}

// report writes why the session was blocked, escaped once, here.
func (r *relay) report(b *BlockedError) {
	var sb strings.Builder
	if b.Decision != nil {
		what := "the server's definitions changed"
		if b.Decision.FirstUse {
			what = "first use refused, the definitions were not approved"
		}
		sb.WriteString("mcpsign proxy: BLOCKED: " + what + " (" + textsafe.Escape(b.What) + ")")
		if b.Decision.Summary != "" {
			sb.WriteString(": " + textsafe.Escape(b.Decision.Summary))
		}
		sb.WriteString("\n")
		_ = b.Decision.WriteReport(&sb, "  ")
		if b.Err != nil {
			sb.WriteString("mcpsign proxy: " + textsafe.EscapeKeepLayout(b.Err.Error()) + "; the refusal stands\n")
		}
	} else {
		sb.WriteString("mcpsign proxy: BLOCKED: " + textsafe.Escape(b.What) + " could not be checked: " + textsafe.ShowError(b.Err) + "\n")
	}
	sb.WriteString("mcpsign proxy: " + r.stoppedText() + "; every request is answered with error " + fmt.Sprint(BlockedCode) + " until the client disconnects\n")
	r.stderr(sb.String(), true)
}

// stoppedText says what the proxy did to the server when it blocked or was
// interrupted: a stdio server is stopped; with a server at a URL, which
// the proxy does not run, the session is closed.
func (r *relay) stoppedText() string {
	if _, ok := r.c.(*child); ok {
		return "the server was stopped"
	}
	return "the session with the server was closed"
}

// answerBlocked answers a request that arrived after the block.
func (r *relay) answerBlocked(id []byte) {
	r.answer(id, BlockedCode, r.blockMsg, r.blockData)
}

// answer writes an error response to the client.
func (r *relay) answer(id []byte, code int, msg string, data any) {
	r.sendClient(errorLine(id, code, msg, data))
}

// errorLine is a JSON-RPC error response of the proxy's own, as one line.
func errorLine(id []byte, code int, msg string, data any) []byte {
	e := struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}{code, msg, data}
	eb, err := json.Marshal(e)
	if err != nil {
		eb = []byte(`{"code":` + strconv.Itoa(codeInternalError) + `,"message":"mcpsign proxy: internal error"}`)
	}
	return responseLine(id, "error", eb)
}

// respond writes a response of the proxy's own to the client: member
// ("result" or "error") with its JSON value.
func (r *relay) respond(id []byte, member string, value []byte) {
	r.sendClient(responseLine(id, member, value))
}

// responseLine is a JSON-RPC response as one line.
func responseLine(id []byte, member string, value []byte) []byte {
	line := make([]byte, 0, 32+len(id)+len(member)+len(value))
	line = append(line, `{"jsonrpc":"2.0","id":`...)
	line = append(line, id...)
	line = append(line, `,"`+member+`":`...)
	line = append(line, value...)
	line = append(line, "}\n"...)
	return line
}
