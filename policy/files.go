package policy

import (
	"errors"
	"fmt"

	"github.com/mcpsign/mcpsign/digest"
	"github.com/mcpsign/mcpsign/evidence"
	"github.com/mcpsign/mcpsign/trustroot"
)

// LoadKeys reads the public key file of every key identity (Read calls
// it): a file that cannot be read or holds no PEM public key mcpsign
// accepts is ErrFile, named by its JSON Pointer and path. It sets each
// Identity.KeyID, and refuses (ErrDuplicate) one list naming the same key
// twice, in two files or two PEM encodings: one key signs once.
func (f *File) LoadKeys() error {
	load := func(ids []Identity, at string) error {
		for i := range ids {
			id := &ids[i]
			if id.Method != evidence.MethodKey {
				continue
			}
			kid, err := keyIDOfFile(id.Key)
			if err != nil {
				return fmt.Errorf("%w: %s/key: %s: %w", ErrFile, id.at, id.Key, err)
			}
			id.KeyID = kid
			for j := range i {
				if ids[j].KeyID == kid {
					return fmt.Errorf("%w: %s/key: %w: %s is the same key as %s/identities/%d (key ID %s): one key counts once", ErrSyntax, id.at, ErrDuplicate, id.Key, at, j, kid)
				}
			}
		}
		return nil
	}
	if err := load(f.Defaults.Identities, "/defaults"); err != nil {
		return err
	}
	for _, n := range f.Names {
		if err := load(f.Servers[n].Identities, "/servers/"+digest.PointerToken(n)); err != nil {
			return err
		}
	}
	return nil
}

// keyIDOfFile is the key ID of the PEM public key in the file at path.
func keyIDOfFile(path string) (string, error) {
	pub, err := trustroot.ReadPublicKeyFile(path)
	var fe *trustroot.KeyFileError
	if errors.As(err, &fe) {
		return "", fe.Err
	}
	return evidence.KeyID(pub)
}

// CheckFiles reads the trusted material the policy names (its trusted
// root, its CA roots and intermediates) as verification would, and
// returns ErrFile naming the member's JSON Pointer and the file of the
// first that cannot be read or parsed. Key files are read by Read
// (LoadKeys). Files mcpsign writes or fetches later (locks, audit logs,
// bundles, the TUF cache) are not checked.
func (f *File) CheckFiles() error {
	if err := f.checkFiles(); err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	return nil
}

func (f *File) checkFiles() error {
	t := f.Trust
	if t.TrustedRoot != "" {
		if _, err := trustroot.LoadTrustedRootFile(t.TrustedRoot); err != nil {
			return fmt.Errorf("%w: /trust/trustedRoot: %s: %w", ErrFile, t.TrustedRoot, err)
		}
	}
	if t.CARoots != "" {
		at := "/trust/caRoots"
		if t.CAIntermediates != "" {
			at = "/trust/caRoots and /trust/caIntermediates"
		}
		if _, err := trustroot.LoadPKIFiles(t.CARoots, t.CAIntermediates); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrFile, at, err)
		}
	}
	return nil
}
