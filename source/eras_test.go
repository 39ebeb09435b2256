package source

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcpsign/mcpsign/internal/testkit/fixtures"
	"github.com/mcpsign/mcpsign/internal/testkit/fixtures/erasserver"
)

// TestLoadBothEras: a listing reads both eras of a server that speaks both
// and refuses one whose eras serve different definitions or instructions,
// naming both eras and the item (docs/DISCOVERY.md, "Both eras"); a
// server/discover answer the official clients refuse is not read as the
// hello (they fall back to initialize, and so does mcpsign).
func TestLoadBothEras(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		mode, forced string
		item, how    string // the EraError; "" for none
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
		{mode: "legacy-exits", wantErr: "reading the initialize era of a server that also speaks 2026-07-28"},
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
				if ee.Item != tt.item || ee.How != tt.how || ee.Modern != ProtocolModern || ee.Legacy != ProtocolLegacy {
					t.Errorf("EraError %+v, want %s %s", ee, tt.item, tt.how)
				}
				for _, want := range []string{"server/discover", "initialize", `"2026-07-28"`, `"2025-11-25"`, tt.item} {
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
