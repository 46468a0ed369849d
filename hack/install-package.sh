#!/usr/bin/env bash
# Copyright 2026 The Turnstile Authors.
# SPDX-License-Identifier: Apache-2.0
# Installs a Debian package when a command it provides is missing, as root or
# through passwordless sudo, so that `make` targets need nothing set up by hand.
#   hack/install-package.sh COMMAND PACKAGE
# COMMAND may also be an absolute path to a file the package provides (for
# example /usr/lib/x86_64-linux-gnu/libc.a of libc6-dev). Exits 0 when
# COMMAND is there afterwards; otherwise says how to install it and exits 1.
set -euo pipefail
command=${1:?usage: hack/install-package.sh COMMAND PACKAGE} package=${2:?usage: hack/install-package.sh COMMAND PACKAGE}
have() { if [[ $command == /* ]]; then [[ -e $command ]]; else command -v "$command" >/dev/null; fi; }
have && exit 0
sudo=()
[[ $(id -u) -eq 0 ]] || sudo=(sudo -n)
echo "install-package: $command not found; installing Debian's $package" >&2
if command -v apt-get >/dev/null &&
	{ "${sudo[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$package"; } >&2 &&
	have; then
	exit 0
fi
echo "install-package: $command not found and could not be installed (Debian/Ubuntu: apt-get install -y $package)" >&2
exit 1
