-- PostgreSQL's 00030 adds faxhub_refuse, with which one statement that
-- writes several tables refuses itself. SQLite runs such writes as
-- several statements in one transaction and needs nothing: this keeps the
-- two databases' versions in step.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
