package cli

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faxhub/faxhub/rest/client/api"
)

func (s *state) numbersCmd() *cobra.Command {
	c := group("numbers", "fax numbers to receive on")
	var country, area, locality string
	var limit int
	search := &cobra.Command{
		Use:   "search [--country CC] [--area-code N] [--locality L]",
		Short: "find numbers to buy",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sdk, err := s.client()
			if err != nil {
				return err
			}
			p := &api.SearchNumbersParams{Limit: &limit}
			for _, f := range []struct {
				v   string
				dst **string
			}{{country, &p.Country}, {area, &p.AreaCode}, {locality, &p.Locality}} {
				if f.v != "" {
					v := f.v
					*f.dst = &v
				}
			}
			res, err := sdk.API().SearchNumbersWithResponse(ctxOf(cmd.Context()), p)
			if err != nil {
				return err
			}
			return s.answer(res.HTTPResponse, res.Body, nil, func(w io.Writer) {
				rows := [][]string{}
				for _, n := range res.JSON200.Data {
					rows = append(rows, []string{n.Number, n.Country, str(n.Region), str(n.Locality), n.MonthlyPrice + " " + strings.ToUpper(string(n.Currency)) + "/month"})
				}
				table(w, []string{"NUMBER", "COUNTRY", "REGION", "LOCALITY", "PRICE"}, rows)
			})
		},
	}
	search.Flags().StringVar(&country, "country", "", "ISO 3166-1 alpha-2 country (default US)")
	search.Flags().StringVar(&area, "area-code", "", "area code, digits only")
	search.Flags().StringVar(&locality, "locality", "", "city or town (prefix)")
	search.Flags().IntVar(&limit, "limit", 10, "at most this many, 1 to 50")

	var credits bool
	buy := &cobra.Command{
		Use:   "buy NUMBER [--pay-with-credits]",
		Short: "buy a number from search (pay at the printed checkout URL, or with credits)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sdk, err := s.client()
			if err != nil {
				return err
			}
			body := api.BuyNumberRequest{Number: args[0]}
			if credits {
				body.PayWithCredits = &credits
			}
			res, err := sdk.API().BuyNumberWithResponse(ctxOf(cmd.Context()), body)
			if err != nil {
				return err
			}
			return s.answer(res.HTTPResponse, res.Body, nil, func(w io.Writer) { printNumbers(w, []api.Number{*res.JSON200}) })
		},
	}
	buy.Flags().BoolVar(&credits, "pay-with-credits", false, "pay the first month from credits now")

	var all bool
	list := &cobra.Command{
		Use:   "list",
		Short: "list your numbers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sdk, err := s.client()
			if err != nil {
				return err
			}
			res, err := sdk.API().ListNumbersWithResponse(ctxOf(cmd.Context()), &api.ListNumbersParams{All: &all})
			if err != nil {
				return err
			}
			return s.answer(res.HTTPResponse, res.Body, nil, func(w io.Writer) { printNumbers(w, res.JSON200.Data) })
		},
	}
	list.Flags().BoolVar(&all, "all", false, "also numbers no longer held")

	release := &cobra.Command{
		Use:   "release NUMBER_ID",
		Short: "release a number at the end of its paid month",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sdk, err := s.client()
			if err != nil {
				return err
			}
			res, err := sdk.API().ReleaseNumberWithResponse(ctxOf(cmd.Context()), args[0])
			if err != nil {
				return err
			}
			return s.answer(res.HTTPResponse, res.Body, nil, func(w io.Writer) { printNumbers(w, []api.Number{*res.JSON200}) })
		},
	}
	c.AddCommand(search, buy, list, release)
	return c
}

func printNumbers(w io.Writer, ns []api.Number) {
	rows := [][]string{}
	for _, n := range ns {
		rows = append(rows, []string{n.Id, n.Number, string(n.Status), when(n.PaidThrough), str(n.CheckoutUrl)})
	}
	table(w, []string{"ID", "NUMBER", "STATUS", "PAID THROUGH", "CHECKOUT"}, rows)
}
