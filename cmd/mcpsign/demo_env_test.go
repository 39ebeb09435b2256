package main

import "github.com/mcpsign/mcpsign/internal/app/demo"

// envDemoServer is the variable that gives the demo the tests' example
// server (a test binary has no example-server command).
const envDemoServer = demo.EnvServer
