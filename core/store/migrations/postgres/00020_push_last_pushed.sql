-- A2A push notifications are not repeated (core/tasks, push.go):
-- a2a_push_configs.last_pushed is the lowercase hex SHA-256 of the last
-- body its receiver acknowledged (2xx), written with the attempt's
-- outcome; a notification whose body would be the same is not sent. It is
-- logged as such: its delivery and its attempt end 'skipped'.

-- +goose Up
ALTER TABLE a2a_push_configs ADD COLUMN last_pushed TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_status_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check CHECK (status IN ('pending', 'delivered', 'failed', 'skipped'));
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_status_check;
ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_status_check CHECK (status IN ('sending', 'succeeded', 'failed', 'interrupted', 'skipped'));

-- +goose Down
UPDATE webhook_attempts SET status = 'failed' WHERE status = 'skipped';
UPDATE webhook_deliveries SET status = 'failed' WHERE status = 'skipped';
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_status_check;
ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_status_check CHECK (status IN ('sending', 'succeeded', 'failed', 'interrupted'));
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_status_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check CHECK (status IN ('pending', 'delivered', 'failed'));
ALTER TABLE a2a_push_configs DROP COLUMN last_pushed;
