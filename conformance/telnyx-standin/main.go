// Command telnyx-standin runs internal/telnyxstandin as a process: a local
// Telnyx for faxhub's contract suite (cmd/faxhub/telnyx_test.go) and for
// trying live mode by hand. It prints its public key, then "listening on
// ADDR" once it serves.
//
//	go run ./conformance/telnyx-standin --addr 127.0.0.1:8090 \
//	    --webhook-url http://localhost:8080/webhooks/telnyx --seed-hex $(printf '%064d' 7)
//
// Give faxhub FAXHUB_TELNYX_API_URL=http://127.0.0.1:8090, any
// FAXHUB_TELNYX_API_KEY (or the one passed as --api-key), a connection id,
// and the printed key as FAXHUB_TELNYX_PUBLIC_KEY.
package main

import (
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/faxhub/faxhub/internal/telnyxstandin"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "telnyx-standin:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	webhook := flag.String("webhook-url", "http://localhost:8080/webhooks/telnyx", "where events are posted")
	seedHex := flag.String("seed-hex", "", "32-byte Ed25519 seed in hex (the signing key; required so faxhub can be given the public key)")
	apiKey := flag.String("api-key", "", "the only API key accepted (default: any)")
	step := flag.Duration("step", 50*time.Millisecond, "pause between a fax's events")
	slow := flag.Duration("slow-call", time.Minute, "how long a fax to +12125550109 stays sending")
	orderDelay := flag.Duration("order-delay", 300*time.Millisecond, "how long a number order stays pending")
	retryBase := flag.Duration("retry-base", 500*time.Millisecond, "first webhook retry delay (doubled up to 8 s)")
	flag.Parse()
	seed, err := hex.DecodeString(*seedHex)
	if err != nil {
		return fmt.Errorf("--seed-hex: %w", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	s, err := telnyxstandin.New(telnyxstandin.Options{
		Seed: seed, APIKey: *apiKey, WebhookURL: *webhook, BaseURL: "http://" + ln.Addr().String(),
		Step: *step, SlowCall: *slow, OrderDelay: *orderDelay, RetryBase: *retryBase, Logger: log,
	})
	if err != nil {
		ln.Close()
		return err
	}
	defer s.Close()
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Printf("public key %s\nlistening on %s\n", s.PublicKey(), ln.Addr())
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return err
	}
	return nil
}
