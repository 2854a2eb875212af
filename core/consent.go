package core

import "slices"

// This file holds the two rules that decide what an owner's consent is
// worth: what a chat-app token may do now (GrantScopes), and what an owner
// may approve when asked (NarrowScopes). They were decided at the doors
// (oauth, passkeys, and inline in the claim and device decisions); here
// every door asks the same function.

// GrantScopes is what a chat-app (OAuth grant) access token may do now:
// the product scopes the token was issued with that the grant still
// allows. A later consent that narrowed the grant so narrows the tokens
// issued before it; OpenID scopes (openid, profile, …) and unknown names
// carry no product permission and are dropped. The result is in
// FaxScopes order, without duplicates.
func GrantScopes(tokenScopes, grantScopes []string) []Scope {
	var out []Scope
	for _, sc := range FaxScopes() {
		if slices.Contains(tokenScopes, string(sc)) && slices.Contains(grantScopes, string(sc)) {
			out = append(out, sc)
		}
	}
	return out
}

// NarrowScopes applies "narrow, never widen" to an owner's decision: the
// owner may approve fewer than was asked, never more. requested is what the
// app, agent or host asked for; chosen is what the owner approved, nil
// meaning all of it. Anything chosen that was not requested (a wider or an
// unknown scope: the request is the only list that counts) is refused with
// widen's error, so that each door keeps the kind, code and words it
// documents (insufficient_scope for an app's consent,
// claim_scope_not_permitted for an agent claim, capability_not_requested
// for a device approval). The result keeps requested's order, without
// duplicates; it may be empty, and whether an empty approval is allowed is
// the caller's rule.
func NarrowScopes[S ~string](requested, chosen []S, widen func(item S) *Error) ([]S, error) {
	if chosen == nil {
		return KeptScopes(requested, requested), nil
	}
	for _, c := range chosen {
		if !slices.Contains(requested, c) {
			return nil, widen(c)
		}
	}
	return KeptScopes(requested, chosen), nil
}

// KeptScopes is what stays of requested once a decision recorded elsewhere
// is applied: the requested items that were chosen, in requested's order,
// without duplicates (nil when nothing stays). It never refuses: anything chosen beyond the request
// is ignored, so applying a decision can only narrow (the OAuth consent
// resume applies a decision that NarrowScopes checked when it was made, and
// must stay safe if one was recorded without that check).
func KeptScopes[S ~string](requested, chosen []S) []S {
	var out []S
	for _, r := range requested {
		if slices.Contains(chosen, r) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
