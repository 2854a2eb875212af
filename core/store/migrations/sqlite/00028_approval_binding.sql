-- A chat app's send_fax that waits for the owner (approvals of kind
-- chat_send) is found again by the exact fax it is bound to: a retry with
-- the same arguments reads the owner's approval of that kind and binding
-- (approvals.Service.FindByBinding). Each binding (one app, one draft,
-- one fax) is asked at most once: two concurrent first calls make one
-- approval, the second insert finds the first.

-- +goose Up
CREATE UNIQUE INDEX approvals_chat_send ON approvals (owner_id, binding_hash) WHERE kind = 'chat_send';

-- +goose Down
DROP INDEX approvals_chat_send;
