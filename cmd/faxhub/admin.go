package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/app"
)

func migrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c config
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	commonFlags(fs, &c)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := c.finish(); err != nil {
		return err
	}
	db, err := app.OpenDB(ctx, c.DataDir, c.Database)
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// admin runs operator commands. They use the database directly, so only
// someone with database access can run them.
func admin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) >= 1 && args[0] == "demo" {
		return adminCmd(ctx, "demo", args[1:], stdout, stderr)
	}
	if len(args) >= 1 && args[0] == "purge" {
		return adminPurge(ctx, args[1:], stdout, stderr)
	}
	if len(args) >= 2 && args[0] == "inbox" && args[1] == "deliver" {
		return adminCmd(ctx, "inbox deliver", args[2:], stdout, stderr)
	}
	if len(args) >= 2 && args[0] == "keys" && args[1] == "rotate" {
		return adminKeysRotate(ctx, args[2:], stdout, stderr)
	}
	if len(args) < 2 {
		return usageError{"usage: faxhub admin owner|apikey|credits|session create|grant …, admin inbox deliver, admin demo, admin purge, admin keys rotate"}
	}
	return adminCmd(ctx, args[0]+" "+args[1], args[2:], stdout, stderr)
}

func adminCmd(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	var c config
	fs := flag.NewFlagSet("admin "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	commonFlags(fs, &c)
	email := fs.String("email", "", "owner email")
	owner := fs.String("owner", "", "owner email")
	ownerName := fs.String("name", "", "display name (owner) or key name (apikey)")
	mode := fs.String("mode", "", "test or live")
	usd := fs.String("usd", "", "amount in USD, e.g. 10 or 2.50")
	reason := fs.String("reason", "", "why credits are granted (recorded in the ledger)")
	to := fs.String("to", "", "inbox deliver: the test number (E.164 or num_…) that receives the fax")
	from := fs.String("from", "", "inbox deliver: the sender shown (default +12125550100)")
	file := fs.String("file", "", "inbox deliver: the file to deliver (PDF, image or office document)")
	switch name {
	case "owner create", "apikey create", "credits grant", "session create", "demo", "inbox deliver":
	default:
		return usageError{fmt.Sprintf("unknown admin command %q", name)}
	}
	if err := parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if err := c.finish(); err != nil {
		return err
	}
	log := newLogger(c, os.Stderr)
	a, err := build(ctx, c, log, false)
	if err != nil {
		return err
	}
	defer a.Close()
	svc := a.Svc

	findOwner := func() (*accounts.Owner, error) {
		if *owner == "" {
			return nil, usageError{"--owner EMAIL is required"}
		}
		return svc.Accounts.OwnerByEmail(ctx, *owner)
	}
	parseMode := func() (core.Mode, error) {
		m, err := core.ParseMode(*mode)
		if err != nil {
			return "", usageError{"--mode test|live is required"}
		}
		return m, nil
	}

	switch name {
	case "owner create":
		if *email == "" {
			return usageError{"--email is required"}
		}
		o, err := svc.Accounts.CreateOwner(ctx, *email, *ownerName, true)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, o.ID)
	case "apikey create":
		o, err := findOwner()
		if err != nil {
			return err
		}
		m, err := parseMode()
		if err != nil {
			return err
		}
		secret, k, err := svc.Accounts.CreateAPIKey(ctx, o.ID, m, *ownerName)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, secret)
		fmt.Fprintf(stderr, "created %s key %s for %s; the key is shown once, store it now\n", m, k.ID, o.Email)
	case "credits grant":
		o, err := findOwner()
		if err != nil {
			return err
		}
		m, err := parseMode()
		if err != nil {
			return err
		}
		micros, err := core.ParseUSD(*usd)
		if err != nil || micros <= 0 {
			return usageError{"--usd must be a positive amount such as 10 or 2.50"}
		}
		r := *reason
		if r == "" {
			r = "operator grant"
		}
		e, err := svc.Credits.Grant(ctx, o.ID, m, micros, r)
		if err != nil {
			return err
		}
		b, err := svc.Credits.Balance(ctx, o.ID, m)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", e.ID)
		fmt.Fprintf(stderr, "granted %s USD of %s credits to %s; available now %s USD\n", e.Amount, m, o.Email, b.Available)
	case "session create":
		o, err := findOwner()
		if err != nil {
			return err
		}
		secret, _, err := svc.Accounts.CreateSession(ctx, o.ID, "faxhub admin session create")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s=%s\n", web.SessionCookieName, secret)
	case "demo":
		return createDemo(ctx, svc, c.APIURL, stdout)
	case "inbox deliver":
		if *to == "" || *file == "" {
			return usageError{"--to NUMBER and --file PATH are required"}
		}
		// The service consumes the file it delivers: hand it a copy.
		tmp, err := copyToTemp(*file)
		if err != nil {
			return err
		}
		f, err := svc.Inbox.DeliverTestFax(ctx, "", inbox.TestInboundFax{To: *to, From: *from, Path: tmp})
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, f.ID)
		fmt.Fprintf(stderr, "delivered to %s; a running `faxhub serve` reads it into the inbox within seconds\n", f.To)
	}
	return nil
}

// copyToTemp copies path to a new temporary file and returns its name.
func copyToTemp(path string) (string, error) {
	src, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	defer src.Close()
	dst, err := os.CreateTemp("", "faxhub-deliver-*")
	if err != nil {
		return "", fmt.Errorf("copy %s: %w", path, err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		os.Remove(dst.Name())
		return "", fmt.Errorf("copy %s: %w", path, err)
	}
	return dst.Name(), dst.Close()
}

// createDemo makes (or reuses) the demo owner, gives it a new test key and
// 10 USD of test credits, and prints the key once.
func createDemo(ctx context.Context, svc *services.Set, apiURL string, w io.Writer) error {
	o, err := svc.Accounts.OwnerByEmail(ctx, demoEmail)
	if core.ErrorKind(err) == core.KindNotFound {
		o, err = svc.Accounts.CreateOwner(ctx, demoEmail, "Demo Owner", true)
	}
	if err != nil {
		return err
	}
	secret, _, err := svc.Accounts.CreateAPIKey(ctx, o.ID, core.ModeTest, "demo")
	if err != nil {
		return err
	}
	if _, err := svc.Credits.Grant(ctx, o.ID, core.ModeTest, 10*core.MicrosPerDollar, "demo credits"); err != nil {
		return err
	}
	fmt.Fprintf(w, "demo owner: %s\ntest API key (shown once): %s\ntest credits: +10.00 USD\n\nTry:\n  curl -s -X POST %s/api/v1/uploads -H 'Authorization: Bearer %s'\n", o.Email, secret, apiURL, secret)
	return nil
}

// withApp parses an admin command's flags (the common ones plus those
// extra adds), builds the app without delivery workers and runs fn on it.
func withApp(ctx context.Context, name string, args []string, stderr io.Writer, extra func(*flag.FlagSet, *config), fn func(*app.App) error) error {
	var c config
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	commonFlags(fs, &c)
	if extra != nil {
		extra(fs, &c)
	}
	if err := parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if err := c.finish(); err != nil {
		return err
	}
	a, err := build(ctx, c, newLogger(c, os.Stderr), false)
	if err != nil {
		return err
	}
	defer a.Close()
	return fn(a)
}

// adminPurge runs the garbage collector once, with the retention the flags
// give (the server's defaults unless told otherwise), and prints how many
// of each kind it removed, one "kind count" line each.
func adminPurge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := func(fs *flag.FlagSet, c *config) {
		storageFlags(fs, c)
		fs.StringVar(&c.BlobURL, "blobs", os.Getenv("FAXHUB_BLOB_URL"), "blob store URL, as for serve [FAXHUB_BLOB_URL] (default: files in the data dir)")
	}
	return withApp(ctx, "admin purge", args, stderr, flags, func(a *app.App) error {
		counts, err := a.Svc.Retention.Purge(ctx)
		for _, pc := range counts {
			fmt.Fprintf(stdout, "%s %d\n", pc.What, pc.N)
		}
		return err
	})
}

// adminKeysRotate is `faxhub admin keys rotate`: new signing keys of the
// OAuth server — token EdDSA and RS256, receipt EdDSA — are published at
// once and sign from seven minutes on (every replica's key cache and every
// verifier's cached JWKS hold them by then), the old ones signing until
// then. The old token keys stay in the JWKS and keep verifying what they
// signed for 31 days; the old receipt key stays in it for good, so
// receipts it signed keep verifying (docs/oauth.md, "Signing keys"). It
// prints one "alg kid purpose" line per new key.
func adminKeysRotate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return withApp(ctx, "admin keys rotate", args, stderr, nil, func(a *app.App) error {
		keys, err := a.OAuth.RotateSigningKeys(ctx)
		if err != nil {
			return err
		}
		for _, k := range keys {
			fmt.Fprintf(stdout, "%s %s %s\n", k.Alg, k.KeyID, k.Purpose)
		}
		if len(keys) > 0 {
			fmt.Fprintf(stderr, "new signing keys are published and sign from %s; the previous ones sign until then, then the token keys stay published and accepted for 31 days, the receipt key for good\n",
				keys[0].SignsFrom.UTC().Format(time.RFC3339))
		}
		return nil
	})
}
