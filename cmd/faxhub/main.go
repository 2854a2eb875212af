// Command faxhub is the whole product in one binary: the server (serve), the
// migration runner (migrate) and the operator commands (admin …). It only
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
	"syscall"
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

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"a command is required"}
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
