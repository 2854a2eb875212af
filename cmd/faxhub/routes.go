package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"

	"github.com/faxhub/faxhub/internal/app"
)

// routes prints the route table of the server serve would run with the
// same flags: it wires that very process (database included, no workers)
// and lists its router, then closes it.
func routes(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c config
	fs := serverFlags("routes", &c, stderr)
	if err := parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if err := c.finish(); err != nil {
		return err
	}
	a, err := build(ctx, c, newLogger(c, os.Stderr), false)
	if err != nil {
		return err
	}
	defer a.Close()
	return app.WriteRoutes(stdout, a.Routes())
}
