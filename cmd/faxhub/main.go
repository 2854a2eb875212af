// Command faxhub is the whole product in one binary: the server (serve), the
// migration runner (migrate), the operator commands (admin …) and the
// command-line client (login, fax, inbox, … in internal/cli). It only
// parses configuration and wires packages together; every decision lives in
// core and its adapters.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/faxhub/faxhub/internal/cli"
)

const usage = `faxhub — fax sending for agents and backends

Usage:
  faxhub serve   [flags]                 run the server
  faxhub migrate [flags]                 apply database migrations and exit
  faxhub routes  [serve's flags]         list every HTTP route of the server these flags configure
  faxhub admin owner create   --email E [--name N]
  faxhub admin apikey create  --owner E --mode test|live [--name N]
  faxhub admin credits grant  --owner E --mode test|live --usd AMOUNT [--reason R]
  faxhub admin session create --owner E
  faxhub admin demo                      create a demo owner with a test key and test credits
  faxhub admin purge [--retention D]     delete what outlived its retention, once; prints counts
  faxhub admin keys rotate               new signing keys (tokens and receipts); prints "alg kid purpose" each
  faxhub receipt verify FILE|- [--jwks FILE_OR_URL] [--issuer URL] [--json]
                                         verify a signed delivery receipt (docs/receipts.md); no database

Client commands (docs/cli.md; "faxhub <command> -h" for each):
  faxhub login --api-key KEY|-           store an API key in a profile (or set FAXHUB_API_KEY)
  faxhub fax send FILE… --to N [--watch] upload and send; fax status|list|cancel|receipt|report
  faxhub inbox list|read|download        received faxes
  faxhub numbers search|buy|list|release fax numbers
  faxhub credits                         the credit balance and ledger
  faxhub webhooks listen --forward URL   relay your events to a local receiver, signed
  faxhub completion bash|zsh|fish|powershell

Common flags (environment variable in brackets):
  --data DIR          data directory [FAXHUB_DATA] (default ./faxhub-data)
  --database URL      postgres://… or a SQLite path [FAXHUB_DATABASE_URL] (default SQLite in the data dir)
Run "faxhub serve -h" for the server's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		var ce clientExit
		if errors.As(err, &ce) {
			// The client command printed its error already.
			os.Exit(int(ce))
		}
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(os.Stderr, "faxhub:", err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "faxhub:", err)
		os.Exit(1)
	}
}

// usageError marks mistakes in the command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// clientExit is a client command's non-zero exit status (docs/cli.md).
type clientExit int

func (e clientExit) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"a command is required"}
	}
	if slices.Contains(cli.Commands, args[0]) {
		env := cli.SystemEnv()
		env.Stdout, env.Stderr = stdout, stderr
		if code := cli.Run(ctx, args, env); code != cli.ExitOK {
			return clientExit(code)
		}
		return nil
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "migrate":
		return migrate(ctx, args[1:], stdout, stderr)
	case "routes":
		return routes(ctx, args[1:], stdout, stderr)
	case "admin":
		return admin(ctx, args[1:], stdout, stderr)
	case "receipt":
		return receiptCmd(ctx, args[1:], os.Stdin, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usageError{fmt.Sprintf("unknown command %q", args[0])}
}
