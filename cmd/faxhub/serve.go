package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/internal/app"
)

// demoEmail is the owner `faxhub admin demo` creates.
const demoEmail = "demo@faxhub.test"

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c config
	fs := serveFlags(&c, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if err := c.finish(); err != nil {
		return err
	}
	log := newLogger(c, os.Stderr)
	start := time.Now()
	a, err := build(ctx, c, log, true)
	if err != nil {
		return err
	}
	defer a.Close()

	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.Addr, err)
	}
	srv := &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// No WriteTimeout/ReadTimeout: uploads of 50 MB over slow links
		// must not be cut; handlers bound their own work. Bodies are
		// bounded per request instead (web.ReadDeadlines, wired in
		// app.Handler): 30 s for a JSON or form body, uploads at 64 KiB/s
		// on average after 30 s.
	}
	if err := a.Queue.Start(ctx); err != nil {
		return fmt.Errorf("start job queue: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("faxhub ready", "addr", ln.Addr().String(), "base_url", c.BaseURL, "database", a.DB.Dialect(), "startup", time.Since(start).Round(time.Millisecond))
	// The banner may ask a question on a terminal: never let that hold up
	// serving or shutting down.
	go banner(ctx, a, c, stdout)

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err = srv.Shutdown(sctx)
	if qerr := a.Queue.Stop(sctx); qerr != nil {
		log.Warn("stop job queue", "err", qerr)
	}
	return err
}

// banner tells a new operator where things are and how to get a key.
func banner(ctx context.Context, a *app.App, c config, w io.Writer) {
	fmt.Fprintf(w, "\nfaxhub is running at %s\n", c.BaseURL)
	fmt.Fprintf(w, "  API       %s/api/v1/   (OpenAPI: %s/openapi.json)\n", c.APIURL, c.BaseURL)
	fmt.Fprintf(w, "  data dir  %s\n\n", c.DataDir)
	if c.Dev {
		if _, err := a.Svc.OwnerByEmail(ctx, demoEmail); errors.Is(err, nil) {
			fmt.Fprintf(w, "Demo owner %s exists. A new test key: faxhub admin apikey create --owner %s --mode test\n\n", demoEmail, demoEmail)
			return
		} else if core.ErrorKind(err) != core.KindNotFound {
			return
		}
		if offer, answer := stdinIsTerminal(); offer {
			fmt.Fprintf(w, "Dev mode: create a demo owner with a test API key and 10 USD of test credits? [Y/n] ")
			if yes(answer()) {
				if err := createDemo(ctx, a.Svc, c.APIURL, w); err != nil {
					fmt.Fprintf(w, "could not create the demo owner: %v\n", err)
				}
				fmt.Fprintln(w)
				return
			}
		}
		fmt.Fprintf(w, "Dev mode: create a demo owner with a test API key and 10 USD of test credits with\n  %s admin demo --data %s\n\n", selfName(), c.DataDir)
		return
	}
	fmt.Fprintf(w, "To get a test API key:\n  %s admin owner create --email you@example.com\n  %s admin apikey create --owner you@example.com --mode test\n  %s admin credits grant --owner you@example.com --mode test --usd 10\n\n", selfName(), selfName(), selfName())
}

func selfName() string {
	if len(os.Args) > 0 && os.Args[0] != "" {
		return os.Args[0]
	}
	return "faxhub"
}

// stdinIsTerminal reports whether a person can answer a question on stdin,
// and returns how to read one line of answer.
func stdinIsTerminal() (bool, func() string) {
	// A terminal answers TCGETS; /dev/null (CI's stdin) is a character
	// device too but does not, and must never be read as a "yes".
	if _, err := unix.IoctlGetTermios(int(os.Stdin.Fd()), unix.TCGETS); err != nil {
		return false, nil
	}
	return true, func() string {
		line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		return line
	}
}

// yes reads a [Y/n] answer: empty means yes.
func yes(answer string) bool {
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "", "y", "yes":
		return true
	}
	return false
}
