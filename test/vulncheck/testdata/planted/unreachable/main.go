// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command unreachable imports golang.org/x/text/language from v0.3.7 too,
// but never reaches the symbols GO-2022-1059 names: govulncheck's
// reachability analysis must leave it out.
package main

import (
	"fmt"

	"golang.org/x/text/language"
)

func main() {
	fmt.Println(language.English.String())
}
