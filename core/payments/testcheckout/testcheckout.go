// Package testcheckout is test mode's hosted checkout gateway: it sends
// payers to our own test checkout page (internal/testcheckout serves it),
// which takes a documented test card and completes the checkout without
// moving money.
package testcheckout

import (
	"context"
	"fmt"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/checkout"
)

// Test cards accepted by the test checkout page (Stripe's test numbers, so
// they are familiar and never real).
const (
	TestCardSuccess = "4242424242424242"
	TestCardDecline = "4000000000000002"
)

// TestGateway is the test-mode checkout.Gateway.
type TestGateway struct {
	baseURL string
	links   core.Links
}

var _ checkout.Gateway = (*TestGateway)(nil)

// NewTestGateway sends payers to the test checkout page
// (core.LinkTestCheckout), built by links (the router) or, when links is
// nil, from the link's template under baseURL.
func NewTestGateway(baseURL string, links core.Links) *TestGateway {
	return &TestGateway{baseURL: strings.TrimRight(baseURL, "/"), links: links}
}

// Start returns the test page's URL for c; there is no external id.
func (g *TestGateway) Start(ctx context.Context, c *checkout.Checkout, description string) (string, string, error) {
	if c.Mode != core.ModeTest {
		return "", "", fmt.Errorf("start test checkout %s: the test gateway takes test-mode checkouts only, not %s", c.ID, c.Mode)
	}
	u, err := core.LinkURL(g.links, core.Config{BaseURL: g.baseURL, APIURL: g.baseURL}, core.LinkTestCheckout, nil, "id", c.ID)
	if err != nil {
		return "", "", fmt.Errorf("start test checkout %s: %w", c.ID, err)
	}
	return u, "", nil
}
