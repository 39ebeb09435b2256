package pin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpsign/mcpsign/digest"
)

// ErrLockChanged: the lock changed between the review and the approval.
var ErrLockChanged = errors.New("the lock changed since it was read")

// Change is how what a server serves differs from a held lock, by the Set
// Digest of each kind (the static resources' too) and the Instructions
// Digest: what a person reviews and approves as a manual approval
// (docs/LOCK.md "approval"). "" is no instructions.
type Change struct {
	Served, Pinned                   map[digest.Kind]string
	Instructions, PinnedInstructions string
}

// NewChange computes the change from held to snap. A definition or a
// static resource without a digest is an error: it cannot be approved.
// When snap did not list the static resources they are not judged (the
// held lock's stand).
func NewChange(held *Lock, snap *digest.Snapshot) (*Change, error) {
	r := digest.Compute(snap)
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("a definition has no digest: %w", err)
	}
	c := &Change{Served: map[digest.Kind]string{}, Pinned: map[digest.Kind]string{
		digest.KindTool: held.Sets.Tools, digest.KindPrompt: held.Sets.Prompts, digest.KindResourceTemplate: held.Sets.ResourceTemplates,
	}}
	for _, k := range digest.Kinds {
		c.Served[k] = r.Sets[k]
	}
	c.Pinned[digest.KindResource] = digest.EmptySetDigest
	if held.Resources != nil {
		c.Pinned[digest.KindResource] = held.ResourceSet
	}
	c.Served[digest.KindResource] = c.Pinned[digest.KindResource]
	if rr := digest.ComputeResources(snap); rr != nil {
		if err := rr.Err(); err != nil {
			return nil, fmt.Errorf("a resource has no digest: %w", err)
		}
		c.Served[digest.KindResource] = rr.Sets[digest.KindResource]
	}
	if snap.Instructions != nil {
		c.Instructions = digest.InstructionsDigest(*snap.Instructions)
	}
	if held.Instructions != nil {
		c.PinnedInstructions = digest.InstructionsDigest(*held.Instructions)
	}
	return c, nil
}

// changeKinds are the sets of a change, in the order they are said.
func changeKinds() []digest.Kind { return append(digest.Kinds[:], digest.KindResource) }

// None reports whether the server serves what the lock approves.
func (c *Change) None() bool {
	for _, k := range changeKinds() {
		if c.Served[k] != c.Pinned[k] {
			return false
		}
	}
	return c.Instructions == c.PinnedInstructions
}

// Expect is what to expect to approve the change: SET=DIGEST for every
// set that changed, and instructions=DIGEST (none when removed) when they
// changed.
func (c *Change) Expect() []string {
	var out []string
	for _, k := range changeKinds() {
		if c.Served[k] != c.Pinned[k] {
			out = append(out, k.ListMember()+"="+c.Served[k])
		}
	}
	if c.Instructions != c.PinnedInstructions {
		out = append(out, "instructions="+orNone(c.Instructions))
	}
	return out
}

// Stale returns, for each set and the instructions, how what is served
// differs from what the reviewer expects ("SET: the server serves D,
// expected E"): sets gives the expected Set Digest of the kinds named
// (the others must be the lock's), instructions the expected Instructions
// Digest when named. None means the server serves exactly what was
// reviewed.
func (c *Change) Stale(sets map[digest.Kind]string, instructions *string) []string {
	var stale []string
	for _, k := range changeKinds() {
		exp, named := sets[k]
		if !named {
			exp = c.Pinned[k]
		}
		if c.Served[k] != exp {
			stale = append(stale, fmt.Sprintf("%s: the server serves %s, expected %s", k.ListMember(), c.Served[k], exp))
		}
	}
	exp := c.PinnedInstructions
	if instructions != nil {
		exp = *instructions
	}
	if c.Instructions != exp {
		stale = append(stale, fmt.Sprintf("instructions: the server serves %s, expected %s", orNone(c.Instructions), orNone(exp)))
	}
	return stale
}

// StaleSet is the set ("tools", "instructions") a line of Stale is about.
func StaleSet(line string) string {
	set, _, _ := strings.Cut(line, ":")
	return set
}

func orNone(d string) string {
	if d == "" {
		return "none"
	}
	return d
}

// ApproveManual replaces the lock at path, which must still be held (by
// its lockDigest), by the lock of snap approved as a (a manual approval:
// Reason, Approver, SourceRevision; its PreviousLockDigest is set to
// held's), carrying held's capability overrides and pinned resources over.
// record, when set, is called just before the write (the audit log's
// record of the approval). A lock that changed since it was read is
// ErrLockChanged, and nothing is written.
func ApproveManual(ctx context.Context, path string, held *Lock, snap *digest.Snapshot, a Approval, record func(*Lock) error) (*Lock, error) {
	a.Method, a.PreviousLockDigest = MethodManual, held.LockDigest
	next, err := NewLock(snap, a)
	if err != nil {
		return nil, err
	}
	next.CarryOverrides(held)
	next.CarryResources(held)
	err = Update(ctx, path, func(cur *Lock) (*Lock, error) {
		if cur == nil || cur.LockDigest != held.LockDigest {
			return nil, ErrLockChanged
		}
		if record != nil {
			if err := record(next); err != nil {
				return nil, err
			}
		}
		return next, nil
	})
	return next, err
}
