-- The send options (core/faxes Options as JSON: cover page fields, header
-- line, resolution, schedule, retry policy) of the two doors that create a
-- fax after the request: a delegated agent's send_fax, kept while it waits
-- for the owner's approval, and a paying machine's request, kept until its
-- challenge is paid. The fax created then gets them.

-- +goose Up
ALTER TABLE delegated_sends ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
ALTER TABLE machine_requests ADD COLUMN options TEXT NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE machine_requests DROP COLUMN options;
ALTER TABLE delegated_sends DROP COLUMN options;
