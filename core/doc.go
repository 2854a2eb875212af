// Package core holds faxhub's domain: the types every adapter speaks (owners,
// principals, uploads, documents, quotes, drafts, faxes, attempts, ledger
// entries, approvals), the ports adapters implement (Store, BlobStore,
// Converter, FaxProvider, Queue, DestinationChecker), and the services that
// decide everything about faxes, money, scopes and approvals.
//
// Adapters (REST, MCP, A2A, OAuth, passkeys, …) translate their protocol into
// calls on Service with a Principal. Nothing about faxes or money is decided
// outside this package. core imports only the standard library; the
// implementations of its ports live in its subpackages and are wired in
// cmd/faxhub.
package core
