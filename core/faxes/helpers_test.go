package faxes_test

import "context"

var ctx = context.Background()
