package monitor

import "github.com/mcpsign/mcpsign/policy"

// AddPolicy adds to s.Identities and s.KeyIDs the sigstore identities and
// keys of the servers of the policy file at path (names: only those), as
// policy.File.Watchlist gives them. notice, when not nil, is told of each
// server, or identity, that cannot be watched, even when an error follows.
func (s *Setup) AddPolicy(path string, names []string, notice func(policy.Skipped)) error {
	pf, err := policy.Read(path)
	if err != nil {
		return err
	}
	w, err := pf.Watchlist(names)
	if w != nil && notice != nil {
		for _, sk := range w.Skipped {
			notice(sk)
		}
	}
	if err != nil {
		return err
	}
	s.Identities = append(s.Identities, w.Identities...)
	s.KeyIDs = append(s.KeyIDs, w.KeyIDs...)
	return nil
}
