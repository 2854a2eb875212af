// Package services builds faxhub's feature services from one configuration
// and one set of ports, in the order they depend on each other, and hands
// them to the adapters as one Set. It decides nothing itself: it is the
// domain's composition root (cmd/faxhub, through internal/app, is the
// process's).
package services

import (
	"context"
	"errors"
	"log/slog"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/checkout"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/payments"
	"github.com/faxhub/faxhub/core/retention"
	"github.com/faxhub/faxhub/core/tasks"
	"github.com/faxhub/faxhub/core/webhooks"
)

// Store is the database: the kernel's queries and every feature's (one
// implementation, core/store, on SQLite and PostgreSQL).
type Store interface {
	core.Store
	events.Store
	faxes.Queries
	retention.Store
	machine.Queries
	tasks.Queries
	hosts.Queries
	agents.Queries
	checkout.Queries
	inbox.Queries
	numbers.Queries
	documents.Queries
	credits.LedgerStore
	credits.ChargeStore
	approvals.Queries
	accounts.Queries
	webhooks.Queries
}

// Tx is a transaction of the database with every feature's queries (the
// store's transaction implements it; each feature asserts its own part).
type Tx interface {
	core.Tx
	events.Queries
	faxes.Tx
	machine.Tx
	tasks.Tx
	hosts.Tx
	agents.Tx
	checkout.Tx
	inbox.Tx
	numbers.Tx
	documents.Tx
	credits.Tx
	approvals.Tx
	accounts.Queries
	webhooks.Queries
}

// Metrics counts what the features observe (core/prometheus): attempts and
// faxes that end, conversions, and webhook attempts.
type Metrics interface {
	faxes.DeliveryMetrics
	documents.ConversionMetrics
	webhooks.Metrics
}

// Queue is the job queue (core/queue): deliveries, number orders and
// received faxes are scheduled in the transactions that make them due.
type Queue interface {
	numbers.Queue
	faxes.DeliveryQueue
	inbox.Queue
	webhooks.Queue
}

// Deps are the ports the features drive.
type Deps struct {
	Store       Store
	Queue       Queue
	Blobs       core.BlobStore
	Converter   documents.Converter
	Destination core.DestinationChecker
	Prices      *core.PriceTable
	Logger      *slog.Logger
	// Links builds the URLs core hands out from route names: the router
	// (internal/app). Without it each core.Link's template is expanded.
	Links core.Links
	// Signer signs what faxhub asserts to agents (AP2 cart mandates) with
	// the issuer's key; without it AP2 purchases answer
	// payment_method_not_configured.
	Signer core.Signer
	// PaymentMethods maps each mode to the method that charges AP2 payment
	// credentials (a card token): the test card in test mode.
	PaymentMethods map[core.Mode]payments.PaymentMethod
	// Numbers maps each mode to the provider that rents its numbers (the
	// simulator in test mode, Telnyx live); a mode without one answers
	// numbers_not_configured.
	Numbers map[core.Mode]numbers.Provider
	// Providers maps each mode to its fax provider. Test mode must be the
	// simulated provider; live faxing needs a configured one.
	Providers map[core.Mode]faxes.Provider
	// Metrics counts attempts, finished faxes and conversions; nil counts
	// nothing.
	Metrics Metrics
	// AuthState, when the authorization server keeps its state in the same
	// database, is purged by the garbage collector too.
	AuthState retention.AuthStatePurger
	// Checkout maps each mode to its hosted payment gateway (core/checkout);
	// a missing live gateway makes live checkouts answer
	// checkout_not_configured.
	Checkout map[core.Mode]checkout.Gateway
	// Text reads received faxes for agents (pdftotext, tesseract).
	Text inbox.TextExtractor
	// Composer renders faxes as transmitted (cover page, header line) and
	// their previews (core/faxdoc); nil faxes documents as uploaded.
	Composer faxes.Composer
	// Receipts signs delivery receipts (the OAuth keyring); nil issues none.
	Receipts faxes.ReceiptSigner
	// Machine lists the methods paying machines can use, in the order they
	// are offered (core/machine).
	Machine []machine.Method
	// MachineBinder computes the ids of machine payment challenges on the
	// protocol's wire slots (rest/mpp.Binder); required with Machine.
	MachineBinder machine.Binder
	// Webhooks sends webhook attempts (core/webhooks/httpsender, with
	// the address policy of Config.Webhooks); without it nothing is sent.
	Webhooks webhooks.Sender
	// Mailer tells owners what they must know (a webhook endpoint
	// disabled); nil: only the log says it.
	Mailer core.Mailer
	// A2APush renders a task as an A2A push notification's body
	// (protocols/a2a.PushBody); with Signer and Webhooks, agents may set
	// push notification configs on their tasks.
	A2APush tasks.PushRenderer
}

// Config is the configuration of every feature: the kernel's (origins,
// agent mode, clock) and each feature's own section. Zero values take the
// features' defaults.
type Config struct {
	core.Config
	// Documents: upload sizes, pages, the upload token secret.
	Documents documents.Config
	// Faxes: drafts, retries, the send rate.
	Faxes faxes.Config
	// Checkout: how long a hosted checkout can be paid.
	Checkout checkout.Config
	// Storage: upload leases and rates, the quota of unsent documents, and
	// the retention the garbage collector enforces.
	Storage core.StorageConfig
	// Machine: paying machines over HTTP 402.
	Machine machine.Config
	// Numbers: renting fax numbers.
	Numbers numbers.Config
	// Tasks: the streams that follow agent tasks.
	Tasks tasks.Config
	// Webhooks: the address policy, retries, caps and retention of
	// webhook deliveries.
	Webhooks webhooks.Config
}

// Set is every feature service of one process.
type Set struct {
	Kernel    *core.Kernel
	Events    *events.Service
	Accounts  *accounts.Service
	Approvals *approvals.Service
	Credits   *credits.Service
	Documents *documents.Service
	Faxes     *faxes.Service
	Numbers   *numbers.Service
	Agents    *agents.Service
	Checkout  *checkout.Service
	Hosts     *hosts.Service
	Inbox     *inbox.Service
	Machine   *machine.Service
	Retention *retention.Service
	Tasks     *tasks.Service
	Webhooks  *webhooks.Service

	cfg Config
}

// Config returns the effective configuration (defaults applied).
func (s *Set) Config() Config { return s.cfg }

// New builds the feature services, each after those it uses.
func New(cfg Config, deps Deps) (*Set, error) {
	if deps.Store == nil {
		return nil, errors.New("services: Store is required")
	}
	if len(deps.Machine) > 0 && deps.MachineBinder == nil {
		return nil, errors.New("services: machine payment methods need a MachineBinder")
	}
	var delivery faxes.DeliveryMetrics
	if deps.Metrics != nil {
		delivery = deps.Metrics
		if deps.Converter != nil {
			deps.Converter = documents.ObservedConverter(deps.Converter, deps.Metrics, cfg.Now)
		}
	}
	// An approval's decision is followed by the feature that asked for it;
	// the features are built after core, which records the decisions.
	set := &Set{}
	cd := core.Deps{
		Store: deps.Store, Blobs: deps.Blobs, Destination: deps.Destination,
		Prices: deps.Prices, Logger: deps.Logger, Signer: deps.Signer, PaymentMethods: deps.PaymentMethods, Links: deps.Links,
	}
	handlers := map[approvals.Kind]approvals.Handler{
		approvals.KindCreditPurchase: {Decided: func(ctx context.Context, a *approvals.Approval, _ bool) error {
			return set.Tasks.FinishPurchase(ctx, a.ID)
		}},
		approvals.KindFaxSend: {Approve: func(ctx context.Context, ownerID string, a *approvals.Approval, data []byte) error {
			return set.Hosts.ApproveSend(ctx, ownerID, a, data)
		}},
	}
	c, err := core.NewKernel(cfg.Config, cd)
	if err != nil {
		return nil, err
	}
	cfg.Config = c.Config()
	cfg.Machine.SetDefaults()
	cfg.Documents.SetDefaults()
	cfg.Faxes.SetDefaults()
	cfg.Checkout.SetDefaults()
	cfg.Storage.SetDefaults()
	if cfg.Numbers.ReservationTTL == 0 {
		// A number bought waits for its first month as long as a checkout
		// can be paid.
		cfg.Numbers.ReservationTTL = cfg.Checkout.TTL
	}
	kc := cfg.Config
	// The database keeps the e-mail links with the passkeys (every
	// services.Store is an authstate.PasskeyStore: conformance/storetest
	// checks it); one that is not leaves sign-up and recovery unavailable.
	links, _ := deps.Store.(accounts.EmailLinkStore)
	accts := accounts.New(kc, accounts.Deps{Store: deps.Store, Logger: deps.Logger, Kernel: c, Links: links})
	creds := credits.New(kc, credits.Deps{Store: deps.Store, Prices: deps.Prices})
	approvalInbox := approvals.New(kc, approvals.Deps{Store: deps.Store, Handlers: handlers, Logger: deps.Logger})
	docs, err := documents.New(kc, cfg.Documents, cfg.Storage, documents.Deps{Store: deps.Store, Blobs: deps.Blobs, Converter: deps.Converter, Logger: deps.Logger, Kernel: c})
	if err != nil {
		return nil, err
	}
	cfg.Numbers.SetDefaults()
	cfg.Tasks.SetDefaults()
	nums := numbers.New(kc, cfg.Numbers, numbers.Deps{
		Store: deps.Store, Queue: deps.Queue, Providers: deps.Numbers, Destination: deps.Destination,
		Prices: deps.Prices, Logger: deps.Logger, Kernel: c,
	})
	fx, err := faxes.New(kc, cfg.Faxes, faxes.Deps{
		Store: deps.Store, Blobs: deps.Blobs, Destination: deps.Destination, Queue: deps.Queue, Providers: deps.Providers,
		PayerRefunds: machine.NewPayers(deps.Machine), Metrics: delivery, Prices: deps.Prices, Logger: deps.Logger, Kernel: c, Credits: creds, Numbers: nums, Documents: docs,
		Composer: deps.Composer, Receipts: deps.Receipts, Approvals: approvalInbox,
	})
	if err != nil {
		return nil, err
	}
	evs := events.New(deps.Store, core.Clock(cfg.Now).Now)
	cfg.Webhooks.SetDefaults()
	hooks := webhooks.New(kc, cfg.Webhooks, webhooks.Deps{
		Store: deps.Store, Queue: deps.Queue, Sender: deps.Webhooks, Mailer: deps.Mailer, Logger: deps.Logger, Kernel: c, Accounts: accts,
		Metrics: deps.Metrics,
	})
	*set = Set{
		cfg:       cfg,
		Kernel:    c,
		Events:    evs,
		Webhooks:  hooks,
		Accounts:  accts,
		Approvals: approvalInbox,
		Credits:   creds,
		Documents: docs,
		Faxes:     fx,
		Numbers:   nums,
		Machine: machine.New(cfg.Machine, kc, machine.Deps{
			Store: deps.Store, Machine: deps.Machine, Converter: deps.Converter, Destination: deps.Destination,
			Providers: deps.Providers, Logger: deps.Logger, Kernel: c, Faxes: fx, Documents: docs, Binder: deps.MachineBinder,
		}),
		Retention: retention.New(cfg.Storage, core.Clock(cfg.Now), retention.Deps{
			Store: deps.Store, Blobs: deps.Blobs, Documents: fx, AuthState: deps.AuthState, Logger: deps.Logger,
			Purgers: map[string]func(context.Context) (int64, error){"events": evs.Purge, "webhook_deliveries": hooks.Purge, "previews": fx.PurgePreviews,
				"a2a_push_configs": func(ctx context.Context) (int64, error) { return set.Tasks.PurgePushConfigs(ctx) }},
		}),
		Checkout: checkout.New(kc, cfg.Checkout, checkout.Deps{
			Store: deps.Store, Gateways: deps.Checkout, Prices: deps.Prices, Logger: deps.Logger, Kernel: c, Credits: creds, Faxes: fx, Numbers: nums,
		}),
		Agents: agents.New(kc, agents.Deps{Store: deps.Store, Logger: deps.Logger, Kernel: c, Approvals: approvalInbox, Accounts: accts}),
		Hosts: hosts.New(kc, hosts.Deps{
			Store: deps.Store, Destination: deps.Destination, Prices: deps.Prices, Logger: deps.Logger, Kernel: c, Approvals: approvalInbox, Credits: creds, Faxes: fx, Documents: docs,
		}),
		Inbox: inbox.New(kc, inbox.Deps{
			Store: deps.Store, Queue: deps.Queue, Blobs: deps.Blobs, Converter: deps.Converter, Destination: deps.Destination,
			Providers: deps.Providers, Text: deps.Text, Logger: deps.Logger, Kernel: c, Faxes: fx, Documents: docs, Numbers: nums,
		}),
		Tasks: tasks.New(kc, cfg.Tasks, tasks.Deps{
			Store: deps.Store, Signer: deps.Signer, PaymentMethods: deps.PaymentMethods, Prices: deps.Prices,
			Logger: deps.Logger, Kernel: c, Approvals: approvalInbox, Credits: creds, Faxes: fx, Numbers: nums, Events: evs,
			Webhooks: hooks, PushBody: deps.A2APush,
		}),
	}
	// Push notification configs are a destination of the webhook engine.
	hooks.Register(set.Tasks.PushDestination())
	// Agent claims and device approvals are code-confirmed: approved on
	// their own page with the code, declined there or in the inbox. Their
	// handlers come from the features, built after the inbox that holds
	// this map.
	handlers[approvals.KindAgentClaim] = set.Agents.InboxHandler()
	handlers[approvals.KindDevice] = set.Hosts.InboxHandler()
	return set, nil
}
