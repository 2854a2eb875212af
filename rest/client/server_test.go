package client_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/internal/app"
)

// startFaxhub runs a whole faxhub on a loopback port for the examples
// (which have no *testing.T for testenv): SQLite in a temporary
// directory, the simulated provider delivering at once, and an owner with
// a test API key and 10 USD of test credits. It returns the API URL, the
// key and how to stop it.
func startFaxhub() (apiURL, key string, stop func()) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "faxhub-example-")
	check(err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	base := "http://" + ln.Addr().String()
	a, err := app.Open(ctx, app.Options{BaseURL: base, DataDir: dir, SimTimeScale: 0,
		PollInterval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	check(err)
	check(a.Start(ctx))
	owner, err := a.Svc.Accounts.CreateOwner(ctx, "example@example.com", "Example", true)
	check(err)
	key, _, err = a.Svc.Accounts.CreateAPIKey(ctx, owner.ID, core.ModeTest, "example")
	check(err)
	_, err = a.Svc.Credits.Grant(ctx, owner.ID, core.ModeTest, 10*core.MicrosPerDollar, "example")
	check(err)
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return base, key, func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = a.Stop(sctx)
		_ = a.Close()
		_ = os.RemoveAll(dir)
	}
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
