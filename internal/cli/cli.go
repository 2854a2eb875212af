// Package cli is faxhub's command-line client: `faxhub login`, `fax …`,
// `inbox …`, `numbers …`, `credits` and `webhooks listen`, built on the Go
// SDK (rest/client). cmd/faxhub hands it the client commands; every
// command and exit code is documented in docs/cli.md.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faxhub/faxhub/rest/client"
)

// Exit codes (docs/cli.md).
const (
	ExitOK          = 0
	ExitRefused     = 1 // the API refused the request: its code and message are printed
	ExitUsage       = 2 // the command line is wrong
	ExitAuth        = 3 // no credential, or the API did not accept it
	ExitFaxNotSent  = 4 // --watch: the fax ended failed, canceled or partial
	ExitUnavailable = 5 // the API could not be reached or failed (5xx)
)

// Env is what the commands use of the world; tests replace parts of it.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// ConfigDir is the user's configuration directory (os.UserConfigDir).
	ConfigDir func() (string, error)
	// HTTP sends every request; nil: http.DefaultClient.
	HTTP *http.Client
	// Terminal reports whether w is a terminal (progress bars and live
	// status lines only go there).
	Terminal func(w io.Writer) bool
	// After replaces time.After for polls (tests pass an instant one).
	After func(time.Duration) <-chan time.Time
	// Now is the clock that decides when an OAuth token needs refreshing.
	Now func() time.Time
	// OpenBrowser shows a URL to the user (login); tests play the browser.
	OpenBrowser func(url string) error
}

// SystemEnv is the process's environment.
func SystemEnv() Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		ConfigDir: os.UserConfigDir, HTTP: http.DefaultClient, Terminal: isTerminal, After: time.After,
		Now: time.Now, OpenBrowser: openBrowser}
}

// Commands are the names cmd/faxhub hands to Run.
// (__complete is what the completion scripts run to ask for candidates.)
var Commands = []string{"login", "logout", "fax", "inbox", "numbers", "credits", "webhooks", "completion", "__complete", "__completeNoDesc"}

// Run runs one client command line (args without the program name) and
// returns the process's exit code.
func Run(ctx context.Context, args []string, env Env) int {
	sys := SystemEnv()
	if env.HTTP == nil {
		env.HTTP = sys.HTTP
	}
	if env.Getenv == nil {
		env.Getenv = sys.Getenv
	}
	if env.ConfigDir == nil {
		env.ConfigDir = sys.ConfigDir
	}
	if env.Terminal == nil {
		env.Terminal = sys.Terminal
	}
	if env.After == nil {
		env.After = sys.After
	}
	if env.Now == nil {
		env.Now = sys.Now
	}
	st := &state{env: env}
	root := st.root()
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	return st.report(err)
}

// state is one invocation: the environment and the global flags.
type state struct {
	env     Env
	apiURL  string
	profile string
	json    bool
	// sdk is built on first use by client().
	sdk *client.Client
}

func (s *state) root() *cobra.Command {
	root := &cobra.Command{
		Use:           "faxhub",
		Short:         "faxhub's command-line client",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Unknown flags and wrong argument counts are usage errors (exit 2).
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&s.apiURL, "api-url", "", "faxhub's API URL [FAXHUB_API_URL] (default: the profile's, else "+client.DefaultURL+")")
	pf.StringVar(&s.profile, "profile", "", "credential profile [FAXHUB_PROFILE] (default \"default\")")
	pf.BoolVar(&s.json, "json", false, "print the API's JSON instead of text (for scripts)")
	root.AddCommand(s.loginCmd(), s.logoutCmd(), s.faxCmd(), s.inboxCmd(), s.numbersCmd(), s.creditsCmd(), s.webhooksCmd())
	for _, c := range root.Commands() {
		wrapArgs(c)
	}
	return root
}

// wrapArgs turns cobra's argument-count errors into usage errors, in c
// and its subcommands.
func wrapArgs(c *cobra.Command) {
	if v := c.Args; v != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := v(cmd, args); err != nil {
				return usageErr{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

// group is a command that only holds subcommands: run alone or with an
// unknown subcommand it is a usage error naming them.
func group(use, short string) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var names []string
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() {
					names = append(names, c.Name())
				}
			}
			if len(args) > 0 {
				return usagef("unknown command %q for \"faxhub %s\"; use one of: %s", args[0], use, strings.Join(names, ", "))
			}
			return usagef("\"faxhub %s\" needs a command: %s", use, strings.Join(names, ", "))
		}}
}

// usageErr marks a wrong command line (exit 2).
type usageErr struct{ err error }

func (e usageErr) Error() string { return e.err.Error() }
func (e usageErr) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageErr{fmt.Errorf(format, a...)} }

// authErr marks a missing credential (exit 3).
type authErr struct{ msg string }

func (e authErr) Error() string { return e.msg }

// faxNotSent is --watch's outcome for a fax that ended undelivered.
type faxNotSent struct{ status, reason string }

func (e faxNotSent) Error() string {
	if e.reason != "" {
		return fmt.Sprintf("the fax ended %s: %s", e.status, e.reason)
	}
	return "the fax ended " + e.status
}

// report prints err (as JSON with --json) and returns its exit code.
func (s *state) report(err error) int {
	code, status, msg := "", 0, err.Error()
	exit := ExitRefused
	var apiErr *client.Error
	var ue usageErr
	var ae authErr
	var fns faxNotSent
	switch {
	case errors.As(err, &apiErr):
		code, status, msg = apiErr.Code, apiErr.Status, apiErr.Detail
		if msg == "" {
			msg = apiErr.Title
		}
		switch {
		case apiErr.Status == http.StatusUnauthorized:
			exit = ExitAuth
		case apiErr.Status >= 500:
			exit = ExitUnavailable
		}
	case errors.As(err, &ue), isCobraUsage(err):
		code, exit = "usage", ExitUsage
	case errors.As(err, &ae):
		code, exit = "not_logged_in", ExitAuth
	case errors.As(err, &fns):
		code, exit = "fax_"+fns.status, ExitFaxNotSent
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		code, exit = "interrupted", ExitUnavailable
	default:
		code, exit = "unavailable", ExitUnavailable
	}
	if s.json {
		writeJSON(s.env.Stdout, map[string]any{"error": map[string]any{"code": code, "status": status, "message": msg}})
	} else if code != "" && code != "usage" && code != "unavailable" {
		fmt.Fprintf(s.env.Stderr, "faxhub: %s: %s\n", code, msg)
	} else {
		fmt.Fprintf(s.env.Stderr, "faxhub: %s\n", msg)
	}
	if exit == ExitUsage {
		fmt.Fprintln(s.env.Stderr, `Run "faxhub <command> -h" for help.`)
	}
	return exit
}

// isCobraUsage recognizes cobra's own command-line errors (an unknown
// command, a required flag left out), which it returns as plain errors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command ", "required flag(s) ", "unknown flag", "unknown shorthand flag", "invalid argument "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
