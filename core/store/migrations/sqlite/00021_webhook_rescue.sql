-- The deliveries still pending, by when they last moved: the rescue sweep
-- (core/webhooks Service.Rescue) reads the ones whose job was lost
-- without scanning the log of delivered ones.

-- +goose Up
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (updated_at) WHERE status = 'pending';

-- +goose Down
DROP INDEX webhook_deliveries_pending;
