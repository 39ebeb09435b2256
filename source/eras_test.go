package source

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/erasserver"
)

// TestLoadBothEras: a listing reads both eras of a server that speaks both,
// and every version of the initialize handshake, and refuses one that
// serves different definitions or instructions under two of them, naming
// both faces and the item (docs/DISCOVERY.md, "Both eras"); a
// server/discover answer the official clients refuse is not read as the
// hello (they fall back to initialize, and so does mcpsign).
func TestLoadBothEras(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		mode, forced string
		item, how    string // the EraError; "" for none
		first, other Face   // of the EraError; the zero Face means the eras' default
		wantErr      string // another error
		protocol     string // of the snapshot
		instructions string
		tools        int
	}{
		{mode: "same", protocol: ProtocolModern, instructions: erasserver.Instructions, tools: 1},
		{mode: "poison-instructions", item: "the instructions", how: "differ between them"},
		{mode: "poison-tool", item: `tool "a"`, how: "differs between them"},
		{mode: "extra-tool", item: `tool "b"`, how: "is served only under initialize"},
		{mode: "modern-extra", item: `tool "b"`, how: "is served only under server/discover"},
		// Another face under an older version of the initialize handshake
		// (the proxy relays whatever version a client asks for).
		{mode: "old-face", item: `tool "a"`, how: "differs between them",
			other: Face{Handshake: "initialize", Version: "2025-06-18"}},
		{mode: "old-instructions", item: "the instructions", how: "differ between them",
			first: Face{Handshake: "initialize", Version: ProtocolLegacy}, other: Face{Handshake: "initialize", Version: "2025-03-26"}},
		// A version the server refuses with an error answer shows no
		// client anything.
		{mode: "old-refused", protocol: ProtocolModern, instructions: erasserver.Instructions, tools: 1},
		{mode: "old-exits", wantErr: `asking for protocol "2024-11-05"`},
		{mode: "caps-true", protocol: ProtocolLegacy, instructions: erasserver.Poison, tools: 1},
		// Refused by mcpsign's strict reader alone: the official clients
		// read it (the last instructions win) and hold its era's poisoned
		// tool, so it is a protocol error, never a fallback.
		{mode: "dup-instructions", wantErr: `server/discover answer refused`},
		{mode: "case-instructions", wantErr: `"Instructions"`},
		// The TypeScript SDK v2's probe takes an answer without resultType
		// (its schema of it has none): no fallback either.
		{mode: "no-result-type", wantErr: `resultType is missing`},
		{mode: "modern-only", protocol: ProtocolModern, instructions: erasserver.Instructions, tools: 1},
		{mode: "legacy-exits", wantErr: `reading the server again through initialize, asking for protocol "2025-11-25", after reading it under server/discover, protocol "2026-07-28"`},
		// Forcing an era reads that one only (docs/DISCOVERY.md).
		{mode: "poison-instructions", forced: ProtocolModern, protocol: ProtocolModern, instructions: erasserver.Instructions, tools: 1},
		{mode: "poison-instructions", forced: ProtocolLegacy, protocol: ProtocolLegacy, instructions: erasserver.Poison, tools: 1},
	} {
		t.Run(tt.mode+" "+tt.forced, func(t *testing.T) {
			t.Parallel()
			argv := []string{fixtures.Executable(t, erasserver.Program), tt.mode}
			snap, err := Load(context.Background(), Spec{Command: argv}, Options{ProtocolVersion: tt.forced, ShutdownGrace: e2eGrace})
			var ee *EraError
			switch {
			case tt.item != "":
				var se *StageError
				if !errors.As(err, &ee) || !errors.Is(err, ErrErasDiffer) || !errors.As(err, &se) {
					t.Fatalf("err = %v (snapshot %+v), want an EraError", err, snap)
				}
				first, other := tt.first, tt.other
				if first == (Face{}) {
					first = Face{Handshake: "server/discover", Version: ProtocolModern}
				}
				if other == (Face{}) {
					other = Face{Handshake: "initialize", Version: ProtocolLegacy}
				}
				if ee.Item != tt.item || !strings.HasPrefix(ee.How, tt.how) || ee.First != first || ee.Other != other {
					t.Errorf("EraError %+v, want %s %s between %v and %v", ee, tt.item, tt.how, first, other)
				}
				for _, want := range []string{first.String(), other.String(), tt.item} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %s", err, want)
					}
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.As(err, &ee) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if snap.ProtocolVersion != tt.protocol || snap.Instructions == nil || *snap.Instructions != tt.instructions || len(snap.Tools) != tt.tools {
					t.Errorf("snapshot protocol %s, instructions %v, %d tools; want %s, %q, %d",
						snap.ProtocolVersion, snap.Instructions, len(snap.Tools), tt.protocol, tt.instructions, tt.tools)
				}
			}
		})
	}
}
