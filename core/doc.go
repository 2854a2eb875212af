// Package core is faxhub's kernel: what every feature shares. It holds the
// Principal, the scopes and Authorize (the one authorization check), Error
// with its kinds and the shared codes, ids and their prefixes (ids.go),
// money and the price table, the clock, the ports adapters implement (Store,
// BlobStore, DestinationChecker, Signer, …), Config, and Kernel: named rate
// limits, server secrets, signed links, the URLs core hands out (Link) and
// the principals of API keys and sessions.
//
// Each feature is a package under core/ with its own service, store port,
// error codes and tests (accounts, approvals, credits, documents, numbers,
// faxes, inbox, checkout, machine, agents, hosts, tasks, retention);
// core/services builds them. Adapters (REST, MCP, A2A, OAuth, passkeys,
// hostagent) translate their protocol into calls on those services with a
// Principal; nothing about faxes, money, scopes or approvals is decided
// outside core. core imports only the standard library and its own
// subpackages; the implementations of its ports live in subpackages and are
// wired in internal/app.
package core
