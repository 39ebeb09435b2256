package registry

import (
	"fmt"
	"strings"

	"github.com/mcpsign/mcpsign/internal/textsafe"
	"github.com/mcpsign/mcpsign/policy"
)

// GitHubNamespacePrefix starts the official registry's GitHub namespaces:
// io.github.OWNER is granted to the GitHub user or organization OWNER.
const GitHubNamespacePrefix = "io.github."

// checkNamespaceOwner refuses to derive a repository signer for an entry
// of a GitHub namespace (io.github.OWNER/NAME) from a repository that is
// not OWNER's (docs/POLICY.md, "Registry entries"): the entry's name says
// whose it is, and a registry may serve any repository.url. Owners are
// compared as GitHub does, ignoring ASCII case. Other namespaces say
// nothing about a repository.
func checkNamespaceOwner(e *Entry) error {
	ns := Namespace(e.Name)
	if !strings.HasPrefix(ns, GitHubNamespacePrefix) {
		return nil
	}
	owner, _, err := policy.GitHubRepository(e.RepositoryURL)
	if err != nil {
		return err
	}
	if want := strings.TrimPrefix(ns, GitHubNamespacePrefix); !strings.EqualFold(owner, want) {
		return fmt.Errorf("%w: the entry is in namespace %s, its repository.url is %s's", policy.ErrNoRepositorySigner, textsafe.RawQuote(ns), textsafe.RawQuote(owner))
	}
	return nil
}
