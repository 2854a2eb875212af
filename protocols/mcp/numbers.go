package mcp

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faxhub/faxhub/core/numbers"
)

// The fax number tools: search, buy (a reservation the owner pays at a
// hosted checkout; never credits) and list. Core decides everything; these
// only map arguments and results.

type searchNumbersIn struct {
	Country  string `json:"country,omitempty" jsonschema:"ISO 3166-1 alpha-2 country code, e.g. US (default US)"`
	AreaCode string `json:"areaCode,omitempty" jsonschema:"area code, digits only, e.g. 415"`
	Locality string `json:"locality,omitempty" jsonschema:"city or town, matched by prefix"`
	Limit    int    `json:"limit,omitempty" jsonschema:"most numbers to return, 1 to 50 (default 20)"`
}

type searchNumbersOut struct {
	Numbers []numbers.AvailableNumber `json:"numbers"`
}

type buyNumberIn struct {
	Number string `json:"number" jsonschema:"the number to rent, in E.164, from search_numbers"`
}

type listNumbersIn struct {
	All bool `json:"all,omitempty" jsonschema:"also list numbers released, failed or never paid"`
}

type listNumbersOut struct {
	Numbers []numbers.View `json:"numbers"`
}

func (h *Handler) addNumberTools(s *mcp.Server) {
	mcp.AddTool(s, tool(&mcp.Tool{Name: "search_numbers", Annotations: ann("Search fax numbers to rent", true, false, false, true),
		Description: "Search fax numbers the owner can rent (in the token's mode), by country, area code or locality, each with its monthly price. No side effects; then buy_number with one of them." + scopeNote("search_numbers") + phiWarning}),
		h.searchNumbers)
	mcp.AddTool(s, tool(&mcp.Tool{Name: "buy_number", Annotations: ann("Reserve a fax number for the owner to pay", false, false, false, true),
		Description: "Reserve a number from search_numbers for the owner. It never spends credits: the result is the number awaiting_payment with checkoutUrl — give that URL to the owner, who pays the first month there; the number is held until reservedUntil. Once paid it becomes pending, then active (check with list_numbers); an active number receives faxes (list_inbox) and can be the from of create_fax_draft. Months after the first renew from the account's credits." + scopeNote("buy_number") + phiWarning}),
		h.buyNumber)
	mcp.AddTool(s, tool(&mcp.Tool{Name: "list_numbers", Annotations: ann("List the owner's fax numbers", true, false, true, false),
		Description: "List the owner's fax numbers in the token's mode, newest first, with status (awaiting_payment with its checkoutUrl, pending, active, past_due), monthly price and paid-through date; all: true also lists released, failed and unpaid ones." + scopeNote("list_numbers") + phiWarning}),
		h.listNumbers)
}

func (h *Handler) searchNumbers(ctx context.Context, _ *mcp.CallToolRequest, in searchNumbersIn) (*mcp.CallToolResult, searchNumbersOut, error) {
	const tool = "search_numbers"
	p, err := principal(ctx)
	if err != nil {
		return nil, searchNumbersOut{}, h.toolError(ctx, tool, err)
	}
	found, err := h.svc.Numbers.Search(ctx, p, numbers.Search{Country: in.Country, AreaCode: in.AreaCode, Locality: in.Locality, Limit: in.Limit})
	if err != nil {
		return nil, searchNumbersOut{}, h.toolError(ctx, tool, err)
	}
	if found == nil {
		found = []numbers.AvailableNumber{} // an empty list, never null
	}
	return nil, searchNumbersOut{Numbers: found}, nil
}

func (h *Handler) buyNumber(ctx context.Context, _ *mcp.CallToolRequest, in buyNumberIn) (*mcp.CallToolResult, numbers.View, error) {
	const tool = "buy_number"
	p, err := principal(ctx)
	if err != nil {
		return nil, numbers.View{}, h.toolError(ctx, tool, err)
	}
	if in.Number == "" {
		return nil, numbers.View{}, errors.New("invalid_request: number is required; pick one from search_numbers")
	}
	n, err := h.svc.Numbers.Buy(ctx, p, numbers.BuyRequest{Number: in.Number})
	if err != nil {
		return nil, numbers.View{}, h.toolError(ctx, tool, err)
	}
	return nil, numbers.Present(n), nil
}

func (h *Handler) listNumbers(ctx context.Context, _ *mcp.CallToolRequest, in listNumbersIn) (*mcp.CallToolResult, listNumbersOut, error) {
	const tool = "list_numbers"
	p, err := principal(ctx)
	if err != nil {
		return nil, listNumbersOut{}, h.toolError(ctx, tool, err)
	}
	ns, err := h.svc.Numbers.List(ctx, p, in.All)
	if err != nil {
		return nil, listNumbersOut{}, h.toolError(ctx, tool, err)
	}
	out := listNumbersOut{Numbers: make([]numbers.View, 0, len(ns))}
	for i := range ns {
		out.Numbers = append(out.Numbers, numbers.Present(&ns[i]))
	}
	return nil, out, nil
}
