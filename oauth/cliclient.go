package oauth

import (
	"context"
	"fmt"
	"slices"

	"github.com/faxhub/faxhub/core/authstate"
)

// The command-line client (`faxhub login`) is pre-registered rather than
// registering itself at each login: every CLI on every machine is the same
// public client (it holds no secret, PKCE protects the code), a fixed id
// lets the owner recognise it on the consent page and in their connected
// apps, and a login needs no registration (so it works within the
// registration rate limit). Its one redirect URI is a loopback IP literal:
// fosite matches it on any port (RFC 8252 section 7.3), so the CLI listens
// on 127.0.0.1:0 and sends http://127.0.0.1:<port>/callback.
const (
	CLIClientID          = "faxhub-cli"
	CLIClientName        = "faxhub command-line client"
	CLIClientRedirectURI = "http://127.0.0.1/callback"
)

// cliClient is the pre-registered client's row.
func cliClient() authstate.OAuthClient {
	return authstate.OAuthClient{
		ID: CLIClientID, Kind: authstate.OAuthClientDynamic, Name: CLIClientName,
		URI:          "https://github.com/faxhub/faxhub/blob/main/docs/cli.md",
		RedirectURIs: []string{CLIClientRedirectURI},
		GrantTypes:   []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
	}
}

// ensureCLIClient stores the CLI client if it is missing or differs from
// this release's (the grants reference clients, so it is a row like the
// others; dynamic registrations get random ids and never take this one).
// Replicas starting at once write the same row.
func (s *Server) ensureCLIClient(ctx context.Context) error {
	want := cliClient()
	got, err := s.store.GetOAuthClient(ctx, CLIClientID)
	if err == nil && got.Name == want.Name && got.URI == want.URI && slices.Equal(got.RedirectURIs, want.RedirectURIs) &&
		slices.Equal(got.GrantTypes, want.GrantTypes) && slices.Equal(got.ResponseTypes, want.ResponseTypes) {
		return nil
	}
	now := s.now()
	want.CreatedAt, want.UpdatedAt = now, now
	if err == nil {
		want.CreatedAt = got.CreatedAt
	}
	if err := s.store.PutOAuthClient(ctx, &want); err != nil {
		return fmt.Errorf("store the CLI client: %w", err)
	}
	return nil
}
