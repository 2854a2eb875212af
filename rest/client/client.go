package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/faxhub/faxhub/rest/client/api"
)

// DefaultURL is the API origin of a faxhub started with no configuration.
const DefaultURL = "http://localhost:8080"

// TokenSource returns the bearer credential of a request: an API key
// (fxk_test_…, fxk_live_…) or an OAuth access token. It is called once per
// request, so a source may refresh a token that expired.
type TokenSource func(ctx context.Context) (string, error)

// Client calls one faxhub's REST API with one credential. It is safe for
// concurrent use.
type Client struct {
	apiURL string
	http   *http.Client
	api    *api.ClientWithResponses
}

// Option configures New.
type Option func(*Client)

// WithHTTPClient sends requests with hc instead of http.DefaultClient.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// New returns a client of the API at apiURL (faxhub's API origin, e.g.
// http://localhost:8080, without /api/v1) that authenticates every request
// with what token returns. A nil token sends none (only public endpoints
// answer then).
func New(apiURL string, token TokenSource, opts ...Option) (*Client, error) {
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: the API URL %q is not an http(s) URL with a host", apiURL)
	}
	c := &Client{apiURL: strings.TrimSuffix(apiURL, "/"), http: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	auth := func(ctx context.Context, req *http.Request) error {
		if token == nil {
			return nil
		}
		tok, err := token(ctx)
		if err != nil {
			return fmt.Errorf("client: credential: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		return nil
	}
	c.api, err = api.NewClientWithResponses(c.apiURL, api.WithHTTPClient(c.http), api.WithRequestEditorFn(auth))
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return c, nil
}

// StaticToken is the TokenSource of a credential that does not change,
// such as an API key.
func StaticToken(secret string) TokenSource {
	return func(context.Context) (string, error) {
		if secret == "" {
			return "", errors.New("no API key or access token")
		}
		return secret, nil
	}
}

// API is the generated client, authenticated as this one: every endpoint
// of /openapi.json. Its responses carry the raw status and body; pass them
// to Check for a typed error.
func (c *Client) API() *api.ClientWithResponses { return c.api }

// URL is the API origin this client calls.
func (c *Client) URL() string { return c.apiURL }
