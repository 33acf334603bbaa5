#!/usr/bin/env bash
# End-to-end test of the Python receiver with the package standardwebhooks of docs/webhooks.md
# ("Receiving and verifying deliveries"): tests/e2e/test_webhook_receivers.sh with that receiver
# alone. The package comes from PyPI, which the build machines cannot reach: without it the test
# exits 77 (skipped), and CMakeLists.txt registers it DISABLED when python3 cannot import it.
set -euo pipefail

if ! python3 -c 'import standardwebhooks' 2>/dev/null; then
    echo "skipped: the Python package 'standardwebhooks' is not importable (pip install standardwebhooks)"
    exit 77
fi
RECEIVERS=sw-py exec bash "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/test_webhook_receivers.sh"
