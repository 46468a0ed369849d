// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package vulncheck holds what make vulncheck runs, in a module of its own
// so that its graph stays out of the apiserver's: govulncheck
// (golang.org/x/vuln, the tool line), the project's vulnerability database
// (vulndb/, written by ./update from golang.org/x/vulndb at the version
// the Makefile pins), ./gate, which decides from govulncheck's findings
// what fails the build, and the test that plants a vulnerable module and
// checks that govulncheck, with that database, finds it.
package vulncheck
