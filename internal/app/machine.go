package app

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/core/payments/stripe"
	"github.com/faxhub/faxhub/core/payments/tempo"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/stripetest"
	"github.com/faxhub/faxhub/rest"
)

// MachineOptions configure the payment methods of machine payments
// (docs/payments.md). The zero value is the embedded default: test-mode
// card payments against the built-in Stripe test backend, no Tempo.
type MachineOptions struct {
	// StripeSecretKey (FAXHUB_STRIPE_SECRET_KEY) settles card shared
	// payment tokens at Stripe: sk_test_/rk_test_ keys pay for test-mode
	// faxes, others for live ones. Empty: the built-in test backend.
	StripeSecretKey string
	// StripeNetworkID (FAXHUB_STRIPE_NETWORK_ID) is the Stripe profile
	// (profile_…) offers name as methodDetails.networkId; required with a
	// key.
	StripeNetworkID string
	// StripeAPIURL (FAXHUB_STRIPE_API_URL) replaces Stripe's API origin,
	// for stand-ins.
	StripeAPIURL string

	// Tempo push-mode transfers: on when all three are set, a startup
	// error when only some are.
	TempoRPCURL    string // FAXHUB_TEMPO_RPC_URL
	TempoRecipient string // FAXHUB_TEMPO_RECIPIENT, 0x…
	TempoToken     string // FAXHUB_TEMPO_TOKEN, the TIP-20 token address
	// TempoChainID (FAXHUB_TEMPO_CHAIN_ID) defaults to 42431, the Moderato
	// testnet, whose transfers pay for test-mode faxes.
	TempoChainID uint64
}

// Built-in test backend: the key and profile it is configured with, and
// where its SPT mint is served (mppx's MPPX_STRIPE_SPT_URL points there).
const (
	builtinStripeKey     = "sk_test_builtin"
	builtinStripeNetwork = "profile_test_faxhub"
	builtinStripeOrigin  = "http://stripe.builtin.invalid"
	// StripeTestPrefix + stripetest's mint path is the public mint.
	StripeTestPrefix = "/test/stripe"
	// StripeTestMintPath is the one path of the built-in backend served
	// publicly: minting a test SPT.
	StripeTestMintPath = StripeTestPrefix + "/v1/test_helpers/shared_payment/granted_tokens"
)

// Method amounts: Stripe charges USD in cents and refuses less than 50;
// TIP-20 tokens have 6 decimals.
const (
	stripeUnitsPerUSD = 100
	stripeMinCents    = 50
	tempoUnitsPerUSD  = 1_000_000
)

// machineMethods builds the methods paying machines can use, stripe then
// tempo. builtin is the test backend the stripe method settles against when
// no Stripe key is configured (nil otherwise), made with builtinOpts (Open
// gives it the database, so every replica shares its tokens and payments).
func machineMethods(o MachineOptions, builtinOpts ...stripetest.Option) (methods []machine.Method, builtin *stripetest.Server, err error) {
	sm, builtin, err := stripeMethod(o, builtinOpts...)
	if err != nil {
		return nil, nil, err
	}
	methods = append(methods, sm)
	tm, ok, err := tempoMethod(o)
	if err != nil {
		return nil, nil, err
	}
	if ok {
		methods = append(methods, tm)
	}
	return methods, builtin, nil
}

func stripeMethod(o MachineOptions, builtinOpts ...stripetest.Option) (machine.Method, *stripetest.Server, error) {
	key, network, apiURL := o.StripeSecretKey, o.StripeNetworkID, o.StripeAPIURL
	var builtin *stripetest.Server
	client := &http.Client{}
	mode := core.ModeLive
	switch {
	case key == "":
		if network != "" || apiURL != "" {
			return machine.Method{}, nil, errors.New("machine payments: FAXHUB_STRIPE_NETWORK_ID and FAXHUB_STRIPE_API_URL need FAXHUB_STRIPE_SECRET_KEY; without a key the built-in test backend is used")
		}
		// The backend's seller account has the profile the offers name, so
		// it settles the tokens granted to it and no others, as Stripe does.
		builtin = stripetest.New(append(builtinOpts, stripetest.WithProfile(builtinStripeNetwork))...)
		key, network, apiURL = builtinStripeKey, builtinStripeNetwork, builtinStripeOrigin
		client.Transport = builtin.Transport()
		mode = core.ModeTest
	case !strings.HasPrefix(network, "profile_"):
		return machine.Method{}, nil, errors.New("machine payments: FAXHUB_STRIPE_SECRET_KEY is set, so cards are charged through Stripe, which needs FAXHUB_STRIPE_NETWORK_ID, your Stripe profile id (profile_…); set it, or run with --machine-payments off")
	case strings.HasPrefix(key, "sk_test_") || strings.HasPrefix(key, "rk_test_"):
		mode = core.ModeTest
	}
	m, err := stripe.New(stripe.Options{SecretKey: key, BaseURL: apiURL, NetworkID: network, HTTPClient: client})
	if err != nil {
		// stripe.New's messages never contain the key.
		return machine.Method{}, nil, fmt.Errorf("machine payments: %w", err)
	}
	return machine.Method{
		Method: m, Mode: mode, Intent: "charge", Currency: "usd",
		UnitsPerUSD: stripeUnitsPerUSD, MinAmount: stripeMinCents,
		MethodDetails: map[string]any{"networkId": network, "paymentMethodTypes": []string{"card"}},
		Refunds:       true,
	}, builtin, nil
}

// tempoMethod is the tempo method when it is configured (ok), nothing when
// none of its settings is set, and an error naming what is missing when
// only some are.
func tempoMethod(o MachineOptions) (machine.Method, bool, error) {
	set := map[string]string{
		"FAXHUB_TEMPO_RPC_URL": o.TempoRPCURL, "FAXHUB_TEMPO_RECIPIENT": o.TempoRecipient, "FAXHUB_TEMPO_TOKEN": o.TempoToken,
	}
	var missing []string
	for _, name := range [...]string{"FAXHUB_TEMPO_RPC_URL", "FAXHUB_TEMPO_RECIPIENT", "FAXHUB_TEMPO_TOKEN"} {
		if set[name] == "" {
			missing = append(missing, name)
		}
	}
	switch len(missing) {
	case len(set):
		if o.TempoChainID != 0 {
			return machine.Method{}, false, errors.New("machine payments: FAXHUB_TEMPO_CHAIN_ID is set but Tempo is not configured; set FAXHUB_TEMPO_RPC_URL, FAXHUB_TEMPO_RECIPIENT and FAXHUB_TEMPO_TOKEN too")
		}
		return machine.Method{}, false, nil
	case 0:
	default:
		return machine.Method{}, false, fmt.Errorf("machine payments: Tempo is configured in part; set %s too (all of FAXHUB_TEMPO_RPC_URL, FAXHUB_TEMPO_RECIPIENT and FAXHUB_TEMPO_TOKEN, or none)", strings.Join(missing, " and "))
	}
	chain := cmp.Or(o.TempoChainID, tempo.DefaultChainID)
	m, err := tempo.New(tempo.Options{RPCURL: o.TempoRPCURL, Recipient: o.TempoRecipient, Token: o.TempoToken, ChainID: chain})
	if err != nil {
		return machine.Method{}, false, fmt.Errorf("machine payments: %w", err)
	}
	mode := core.ModeLive
	if chain == tempo.DefaultChainID {
		mode = core.ModeTest
	}
	return machine.Method{
		Method: m, Mode: mode, Intent: "charge", Currency: m.Token(),
		UnitsPerUSD: tempoUnitsPerUSD, Recipient: m.Recipient(),
		MethodDetails: map[string]any{"chainId": chain, "supportedModes": []string{"push"}},
		Refunds:       false,
	}, true, nil
}

// machineOffers are the methods core offers, as /openapi.json's
// x-payment-info and /llms.txt list them.
func machineOffers(svc *services.Set) []rest.MachineOffer {
	var offers []rest.MachineOffer
	for _, o := range svc.Machine.Offers() {
		offers = append(offers, rest.MachineOffer{Method: o.Method, Intent: o.Intent, Currency: o.Currency})
	}
	return offers
}

// stripeTestMint serves the built-in backend's SPT mint publicly, so a
// client (mppx with MPPX_STRIPE_SPT_URL) can pay in test mode on a fresh
// machine. Only the mint: the backend's other endpoints settle and refund
// and are the server's alone. Minting is bounded per client address like
// every unauthenticated endpoint.
func (a *App) stripeTestMint() http.Handler {
	mint := http.StripPrefix(StripeTestPrefix, a.stripeTest)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := a.Svc.Kernel.Allow(r.Context(), core.LimitStripeTestMint, web.ClientIP(r)); err != nil {
			web.WriteError(w, r, a.Logger, err)
			return
		}
		mint.ServeHTTP(w, r)
	})
}

// stripeTestMintPath is the path of the public test SPT mint, or "" when
// the built-in backend is not in use (llms.txt mentions it only then).
func (a *App) stripeTestMintPath() string {
	if a.stripeTest == nil {
		return ""
	}
	return StripeTestMintPath
}
