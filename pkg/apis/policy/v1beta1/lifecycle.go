// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package v1beta1

// The API's lifecycle, as the apiserver reads it for every request: it
// tells each client that the API is deprecated (a warning) and counts the
// request in apiserver_requested_deprecated_apis, by which an operator finds
// the clients still using it. Written here rather than generated, because
// prerelease-lifecycle-gen always gives a deprecated API a release from
// which it is removed (deprecated plus three minors, or the tag's), and the
// apiserver then tells every client the API is "unavailable in v1.25+",
// which this build contradicts by serving it. policyserver adds a warning
// of its own saying what is true.

// APILifecycleIntroduced is the release the API came in: v1.10.
func (in *PodSecurityPolicy) APILifecycleIntroduced() (major, minor int) { return 1, 10 }

// APILifecycleDeprecated is the release upstream deprecated the API in:
// v1.21.
func (in *PodSecurityPolicy) APILifecycleDeprecated() (major, minor int) { return 1, 21 }

// APILifecycleIntroduced is the release the API came in: v1.10.
func (in *PodSecurityPolicyList) APILifecycleIntroduced() (major, minor int) { return 1, 10 }

// APILifecycleDeprecated is the release upstream deprecated the API in:
// v1.21.
func (in *PodSecurityPolicyList) APILifecycleDeprecated() (major, minor int) { return 1, 21 }
