// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command kube-apiserver is upstream's kube-apiserver with Turnstile's
// admission registry applied.
package main

import (
	"fmt"
	"os"
	_ "time/tzdata" // CronJob time zones, as upstream's binary embeds them

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // kubernetes_build_info

	"github.com/turnstile-k8s/turnstile/cmd/kube-apiserver/app"
)

func main() {
	command, err := app.NewAPIServerCommand()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kube-apiserver: %v\n", err)
		os.Exit(1)
	}
	os.Exit(cli.Run(command))
}
