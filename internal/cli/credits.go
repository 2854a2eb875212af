package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faxhub/faxhub/rest/client/api"
)

func (s *state) creditsCmd() *cobra.Command {
	var limit int
	c := &cobra.Command{
		Use:   "credits",
		Short: "show the credit balance of the key's mode and the latest ledger entries",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sdk, err := s.client()
			if err != nil {
				return err
			}
			res, err := sdk.API().GetCreditsWithResponse(ctxOf(cmd.Context()), &api.GetCreditsParams{Limit: &limit})
			if err != nil {
				return err
			}
			return s.answer(res.HTTPResponse, res.Body, nil, func(w io.Writer) {
				cr := res.JSON200
				fmt.Fprintf(w, "%s %s available (%s held), %s mode\n", cr.Balance, strings.ToUpper(string(cr.Currency)), cr.Held, cr.Mode)
				rows := [][]string{}
				for _, e := range cr.Ledger {
					rows = append(rows, []string{e.CreatedAt.UTC().Format(time.RFC3339), string(e.Kind), e.Amount, e.Reason, str(e.FaxId)})
				}
				if len(rows) > 0 {
					fmt.Fprintln(w)
					table(w, []string{"WHEN", "KIND", "AMOUNT", "REASON", "FAX"}, rows)
				}
			})
		},
	}
	c.Flags().IntVar(&limit, "limit", 10, "ledger entries to show, 1 to 100")
	return c
}
