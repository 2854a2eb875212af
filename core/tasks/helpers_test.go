package tasks_test

import "context"

var ctx = context.Background()
