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
	var key, consoleURL string
	c := &cobra.Command{
		Use:   "login [--api-key KEY|-]",
		Short: "check an API key and store it in the profile (0600 in the user's config directory)",
		Long: `login checks an API key against the API (--api-url, FAXHUB_API_URL, or the default) and stores
the key and the URL in the profile (--profile, default "default") of
$XDG_CONFIG_HOME/faxhub/config.json, mode 0600. "--api-key -" reads the key from stdin, which keeps
it out of the shell's history and the process list. Without --api-key, login names the console's
API keys page (--console-url, default the API URL) and reads the key you paste. FAXHUB_API_KEY
works without a login.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			apiURL, _, err := s.resolve()
			if err != nil {
				return err
			}
			if key == "" {
				// Interactive: the owner creates a key in the console
				// (passkey sign-in) and pastes it.
				fmt.Fprintf(s.env.Stderr, "Create an API key at %s/console/keys (sign in with your passkey), then paste it here: ", cmpOr(consoleURL, apiURL))
				key = "-"
			}
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
			cf, err := s.loadConfig()
			if err != nil {
				return err
			}
			name := s.profileName()
			c, err := s.newClient(apiURL, client.StaticToken(key))
			if err != nil {
				return err
			}
			limit := 1
			res, err := c.API().GetCreditsWithResponse(ctxOf(cmd.Context()), &api.GetCreditsParams{Limit: &limit})
			if err != nil {
				return err
			}
			if err := client.Check(res.HTTPResponse, res.Body); err != nil {
				return err
			}
			cf.Profiles[name] = Profile{APIURL: apiURL, APIKey: key}
			if err := s.saveConfig(cf); err != nil {
				return err
			}
			path, _ := s.configPath()
			mode := ""
			if res.JSON200 != nil {
				mode = string(res.JSON200.Mode)
			}
			if s.json {
				writeJSON(s.env.Stdout, map[string]string{"profile": name, "apiUrl": apiURL, "mode": mode, "config": path})
				return nil
			}
			fmt.Fprintf(s.env.Stdout, "Logged in to %s with a %s key (profile %q, stored in %s).\n", apiURL, mode, name, path)
			return nil
		},
	}
	c.Flags().StringVar(&key, "api-key", "", `the API key (fxk_test_… or fxk_live_…); "-" reads it from stdin`)
	c.Flags().StringVar(&consoleURL, "console-url", "", "the console's origin, when it differs from the API URL")
	return c
}

func (s *state) logoutCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "forget the profile's stored key",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cf, err := s.loadConfig()
			if err != nil {
				return err
			}
			name := s.profileName()
			_, had := cf.Profiles[name]
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
