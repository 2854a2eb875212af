package client

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/faxhub/faxhub/rest/client/api"
)

// NewIdempotencyKey returns a fresh random Idempotency-Key (128 bits).
func NewIdempotencyKey() string { return "idem_" + rand.Text() }

// SendFax sends a fax (POST /api/v1/faxes). key is its Idempotency-Key:
// retrying a send with the same key and request never makes a second fax
// or charge, so a program that may retry (after a timeout, a crash) should
// choose the key before the first try and keep it. An empty key gets a
// fresh one, which is right for a send that is never retried.
func (c *Client) SendFax(ctx context.Context, key string, req api.SendFaxRequest) (*api.Fax, error) {
	if key == "" {
		key = NewIdempotencyKey()
	}
	res, err := c.api.SendFaxWithResponse(ctx, &api.SendFaxParams{IdempotencyKey: key}, req)
	if err != nil {
		return nil, fmt.Errorf("send fax: %w", err)
	}
	return answer("send fax", res.HTTPResponse, res.Body, res.JSON200)
}

// GetFax returns a fax by id (GET /api/v1/faxes/{id}).
func (c *Client) GetFax(ctx context.Context, id string) (*api.Fax, error) {
	res, err := c.api.GetFaxWithResponse(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get fax: %w", err)
	}
	return answer("get fax", res.HTTPResponse, res.Body, res.JSON200)
}
