package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/app"
)

func newLogger(c config, w *os.File) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// build turns the configuration into a wired process. workers=false builds
// an insert-only queue, for admin commands that must not deliver faxes.
func build(ctx context.Context, c config, log *slog.Logger, workers bool) (*app.App, error) {
	var prices *core.PriceTable
	if c.PriceTable != "" {
		b, err := os.ReadFile(c.PriceTable)
		if err != nil {
			return nil, fmt.Errorf("read price table: %w", err)
		}
		if prices, err = core.ParsePriceTable(b); err != nil {
			return nil, err
		}
	}
	return app.Open(ctx, app.Options{
		BaseURL: c.BaseURL, APIURL: c.APIURL, DataDir: c.DataDir, Database: c.Database, BlobURL: c.BlobURL,
		Prices: prices, MaxUploadBytes: c.MaxUploadMB << 20, MaxPages: c.MaxPages,
		SimTimeScale: c.SimTimeScale, Soffice: c.Soffice, Workers: c.Workers, InsertOnly: !workers,
		MachinePayments: c.MachinePayments, Machine: c.Machine, MCPOAuth: c.MCPOAuth, Dev: c.Dev, SMTPURL: c.SMTPURL, TrustedProxies: c.TrustedProxies,
		AgentMode: core.Mode(c.AgentMode),
		Stripe:    app.StripeOptions{SecretKey: c.Machine.StripeSecretKey, WebhookSecret: c.StripeWebhookSecret, APIURL: c.Machine.StripeAPIURL},
		Telnyx:    c.Telnyx,
		Convert:   c.Convert,
		Core: func(cfg *services.Config) {
			c.storage(&cfg.Storage)
			if c.FaxRetryBackoff != 0 { // admin commands do not register the flag
				cfg.Faxes.RetryBackoff = c.FaxRetryBackoff
			}
		},
		MetricsAddr: c.MetricsAddr,
		Webhooks:    c.Webhooks,
		Logger:      log,
	})
}
