-- Which door sent a fax: the kind of principal that created it (api_key,
-- oauth_grant, agent_registration, delegated_agent, machine_payer,
-- owner_session), its credential's id and the name the owner knows it
-- by (core/faxes SentBy). A draft keeps who made it, for the fax it
-- becomes when paid at its checkout. Never a secret.
--
-- Existing rows: a machine's fax and a delegated agent's approved send
-- are known from their tables; every other fax and draft is unknown (no
-- row recorded the credential before this migration).

-- +goose Up
ALTER TABLE faxes ADD COLUMN sent_by_kind TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE faxes ADD COLUMN sent_by_id TEXT NOT NULL DEFAULT '';
ALTER TABLE faxes ADD COLUMN sent_by_name TEXT NOT NULL DEFAULT '';
ALTER TABLE drafts ADD COLUMN sent_by_kind TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE drafts ADD COLUMN sent_by_id TEXT NOT NULL DEFAULT '';
ALTER TABLE drafts ADD COLUMN sent_by_name TEXT NOT NULL DEFAULT '';
UPDATE faxes SET sent_by_kind = 'machine_payer' WHERE payment_method = 'machine';
UPDATE faxes SET sent_by_kind = 'delegated_agent',
    sent_by_id = (SELECT s.agent_id FROM delegated_sends s WHERE s.fax_id = faxes.id),
    sent_by_name = COALESCE((SELECT a.name FROM delegated_sends s JOIN delegated_agents a ON a.id = s.agent_id
        WHERE s.fax_id = faxes.id), '')
    WHERE id IN (SELECT fax_id FROM delegated_sends WHERE fax_id IS NOT NULL);

-- +goose Down
ALTER TABLE drafts DROP COLUMN sent_by_name;
ALTER TABLE drafts DROP COLUMN sent_by_id;
ALTER TABLE drafts DROP COLUMN sent_by_kind;
ALTER TABLE faxes DROP COLUMN sent_by_name;
ALTER TABLE faxes DROP COLUMN sent_by_id;
ALTER TABLE faxes DROP COLUMN sent_by_kind;
