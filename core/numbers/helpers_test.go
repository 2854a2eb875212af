package numbers_test

import "context"

var ctx = context.Background()
