package cli

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faxhub/faxhub/rest/client"
	"github.com/faxhub/faxhub/rest/client/api"
)

func (s *state) loginCmd() *cobra.Command {
	var key, scopes string
	var noBrowser bool
	c := &cobra.Command{
		Use:   "login [--scopes \"S …\"] [--no-browser] | login --api-key KEY|-",
		Short: "sign in with OAuth in the browser (or store an API key) in the profile (0600 in the user's config directory)",
		Long: `login signs the CLI in to the API (--api-url, FAXHUB_API_URL, or the default) and stores the
credential in the profile (--profile, default "default") of $XDG_CONFIG_HOME/faxhub/config.json,
mode 0600.

Without --api-key it uses OAuth: it opens the browser (or prints the URL, --no-browser) at
faxhub's authorization server, where you sign in with your passkey and approve the faxhub CLI
(client id faxhub-cli) with the scopes asked (--scopes, default "` + defaultScopes + `"); the
answer comes back to a listener on 127.0.0.1. The access token is refreshed when it expires;
logout revokes it.

With --api-key it checks the key and stores it; "--api-key -" reads it from stdin, which keeps it
out of the shell's history and the process list. FAXHUB_API_KEY works without a login.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			apiURL, _, err := s.resolve()
			if err != nil {
				return err
			}
			ctx := ctxOf(cmd.Context())
			name := s.profileName()
			var prof Profile
			tok := client.StaticToken("")
			if key == "" {
				if cmd.Flags().Changed("api-key") {
					return usagef("no API key was given")
				}
				ot, err := s.oauthLogin(ctx, apiURL, scopes, !noBrowser)
				if err != nil {
					return err
				}
				prof = Profile{APIURL: apiURL, OAuth: ot}
			} else {
				if key == "-" {
					line, err := bufio.NewReader(io.LimitReader(s.env.Stdin, 4096)).ReadString('\n')
					if err != nil && err != io.EOF {
						return err
					}
					key = strings.TrimSpace(line)
					if key == "" {
						return usagef("no API key was given")
					}
				}
				prof = Profile{APIURL: apiURL, APIKey: key}
				tok = client.StaticToken(key)
			}
			mode := ""
			if prof.OAuth == nil {
				// A key is checked before it is stored; a token was just
				// issued by the server (and may not hold credits:read).
				c, err := s.newClient(apiURL, tok)
				if err != nil {
					return err
				}
				limit := 1
				res, err := c.API().GetCreditsWithResponse(ctx, &api.GetCreditsParams{Limit: &limit})
				if err != nil {
					return err
				}
				if err := client.Check(res.HTTPResponse, res.Body); err != nil {
					return err
				}
				if res.JSON200 != nil {
					mode = string(res.JSON200.Mode)
				}
			}
			cf, err := s.loadConfig()
			if err != nil {
				return err
			}
			old := cf.Profiles[name].OAuth
			cf.Profiles[name] = prof
			if err := s.saveConfig(cf); err != nil {
				return err
			}
			if old != nil {
				// The login this one replaces: its tokens would otherwise
				// stay valid, stored nowhere (best effort; the new one is
				// stored already).
				if err := s.revoke(ctx, old); err != nil {
					fmt.Fprintf(s.env.Stderr, "faxhub: the previous login of profile %q could not be revoked: %v\n", name, err)
				}
			}
			path, _ := s.configPath()
			what := "a " + mode + " key"
			if prof.OAuth != nil {
				what = "OAuth (" + prof.OAuth.Scope + ")"
			}
			if s.json {
				out := map[string]string{"profile": name, "apiUrl": apiURL, "mode": mode, "config": path}
				if prof.OAuth != nil {
					out["scope"] = prof.OAuth.Scope
				}
				writeJSON(s.env.Stdout, out)
				return nil
			}
			fmt.Fprintf(s.env.Stdout, "Logged in to %s with %s (profile %q, stored in %s).\n", apiURL, what, name, path)
			return nil
		},
	}
	c.Flags().StringVar(&key, "api-key", "", `an API key (fxk_test_… or fxk_live_…) instead of OAuth; "-" reads it from stdin`)
	c.Flags().StringVar(&scopes, "scopes", defaultScopes, "the OAuth scopes to ask for, space-separated (offline_access: a refresh token)")
	c.Flags().BoolVar(&noBrowser, "no-browser", false, "print the sign-in URL instead of opening the browser")
	return c
}

func (s *state) logoutCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "revoke the profile's OAuth login (RFC 7009) and forget the profile",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cf, err := s.loadConfig()
			if err != nil {
				return err
			}
			name := s.profileName()
			p, had := cf.Profiles[name]
			if p.OAuth != nil {
				// Revoked first: a token that stays valid is not forgotten.
				if err := s.revoke(ctxOf(cmd.Context()), p.OAuth); err != nil {
					return fmt.Errorf("the login could not be revoked, so the profile is kept (run logout again): %w", err)
				}
			}
			delete(cf.Profiles, name)
			if err := s.saveConfig(cf); err != nil {
				return err
			}
			if s.json {
				writeJSON(s.env.Stdout, map[string]any{"profile": name, "removed": had})
				return nil
			}
			if had {
				fmt.Fprintf(s.env.Stdout, "Profile %q removed.\n", name)
			} else {
				fmt.Fprintf(s.env.Stdout, "No profile %q was stored.\n", name)
			}
			return nil
		},
	}
}
