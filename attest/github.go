package attest

import "strings"

// SourceFromGitHubActions fills a Source from the GitHub Actions
// environment (GITHUB_SERVER_URL, GITHUB_REPOSITORY, GITHUB_SHA, GITHUB_REF),
// read through getenv. It returns nil outside GitHub Actions.
func SourceFromGitHubActions(getenv func(string) string) *Source {
	if getenv("GITHUB_ACTIONS") != "true" || getenv("GITHUB_REPOSITORY") == "" {
		return nil
	}
	server := strings.TrimSuffix(getenv("GITHUB_SERVER_URL"), "/")
	if server == "" {
		server = "https://github.com"
	}
	return &Source{
		Repository: server + "/" + getenv("GITHUB_REPOSITORY"),
		Commit:     getenv("GITHUB_SHA"),
		Ref:        getenv("GITHUB_REF"),
	}
}
