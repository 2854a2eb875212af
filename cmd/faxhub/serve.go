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
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/convert"
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
	if err := c.checkDevAddr(); err != nil {
		return err
	}
	log := newLogger(c, os.Stderr)
	start := time.Now()
	a, err := build(ctx, c, log, true)
	if err != nil {
		return err
	}
	defer a.Close()

	if bin, err := convert.New(convert.Options{SofficePath: c.Soffice, ColdOffice: true}).OfficePath(); err != nil {
		log.Warn("LibreOffice not found: Word, Excel, ODF and RTF uploads will be refused (415 converter_unavailable_libreoffice) until it is installed or --soffice names it", "err", err)
	} else {
		log.Debug("LibreOffice found", "path", bin)
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.Addr, err)
	}
	srv := &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// No header of ours comes near this; a 100 KB path or cookie is
		// refused (431) before any handler or log line sees it.
		MaxHeaderBytes: maxHeaderBytes,
		// No WriteTimeout/ReadTimeout: uploads of 50 MB over slow links
		// must not be cut; handlers bound their own work. Bodies are
		// bounded per request instead (web.ReadDeadlines, wired in
		// app.Handler): 30 s for a JSON or form body, uploads at 64 KiB/s
		// on average after 30 s.
	}
	// Streams (A2A task streams) last up to an hour: at shutdown they end
	// at once, their clients subscribe again to another replica, and
	// Shutdown waits only for the requests that finish by themselves.
	srv.RegisterOnShutdown(a.Svc.Tasks.CloseStreams)
	purge := func(ctx context.Context) error { _, err := a.Svc.Retention.Purge(ctx); return err }
	if err := a.Queue.SchedulePurge(purge, a.Svc.Config().Storage.GCInterval); err != nil {
		return err
	}
	if c.MachineSweep < time.Second {
		return fmt.Errorf("--machine-sweep-interval %s: must be at least 1s", c.MachineSweep)
	}
	if err := a.Queue.ScheduleMachineSweep(a.Svc.Machine.Sweep, c.MachineSweep); err != nil {
		return err
	}
	if c.NumberSweep < time.Second {
		return fmt.Errorf("--number-sweep-interval %s: must be at least 1s", c.NumberSweep)
	}
	if err := a.Queue.ScheduleNumberSweep(a.Svc.Numbers.Sweep, c.NumberSweep); err != nil {
		return err
	}
	// The job queue's workers and the webhook dispatcher.
	if err := a.Start(ctx); err != nil {
		return fmt.Errorf("start job queue: %w", err)
	}
	if c.MetricsAddr != "" {
		ms, err := a.StartMetrics()
		if err != nil {
			ln.Close()
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			if err := ms.Stop(sctx); err != nil {
				log.Warn("stop metrics listener", "err", err)
			}
		}()
		log.Info("metrics listening", "addr", ms.Addr, "path", "/metrics")
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
	if qerr := a.Stop(sctx); qerr != nil {
		log.Warn("stop job queue", "err", qerr)
	}
	return err
}

// maxHeaderBytes bounds a request's line and headers together.
const maxHeaderBytes = 64 << 10

// banner tells a new operator where things are and how to get a key.
func banner(ctx context.Context, a *app.App, c config, w io.Writer) {
	fmt.Fprintf(w, "\nfaxhub is running at %s\n", c.BaseURL)
	fmt.Fprintf(w, "  API       %s/api/v1/   (OpenAPI: %s/openapi.json)\n", c.APIURL, c.BaseURL)
	fmt.Fprintf(w, "  data dir  %s\n\n", c.DataDir)
	if c.Dev {
		if _, err := a.Svc.Accounts.OwnerByEmail(ctx, demoEmail); errors.Is(err, nil) {
			fmt.Fprintf(w, "Demo owner %s exists. A new test key:\n  %s admin apikey create %s --owner %s --mode test\n\n", demoEmail, selfName(), c.dataFlag(), demoEmail)
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
		fmt.Fprintf(w, "Dev mode: create a demo owner with a test API key and 10 USD of test credits with\n  %s admin demo %s\n\n", selfName(), c.dataFlag())
		return
	}
	self, data := selfName(), c.dataFlag()
	fmt.Fprintf(w, "To get a test API key:\n  %s admin owner create %s --email you@example.com\n  %s admin apikey create %s --owner you@example.com --mode test\n  %s admin credits grant %s --owner you@example.com --mode test --usd 10\n\n", self, data, self, data, self, data)
}

// selfName is how the operator runs this binary again: under `go run` (as
// `make run` does) os.Args[0] is a temporary build that is gone once the
// server stops, so the hint says `go run ./cmd/faxhub` instead.
func selfName() string {
	return commandName(os.Args[0], os.TempDir())
}

func commandName(arg0, tmp string) string {
	switch {
	case arg0 == "":
		return "faxhub"
	case strings.Contains(arg0, string(filepath.Separator)+"go-build") &&
		(strings.HasPrefix(arg0, tmp) || strings.Contains(arg0, filepath.FromSlash("/exe/"))):
		// A `go run` build: under the temporary directory, or wherever
		// GOTMPDIR (or the build cache) put it.
		return "go run ./cmd/faxhub"
	case !strings.ContainsRune(arg0, filepath.Separator):
		// Found on PATH: the name alone works.
		return arg0
	}
	if abs, err := filepath.Abs(arg0); err == nil {
		return abs
	}
	return arg0
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
