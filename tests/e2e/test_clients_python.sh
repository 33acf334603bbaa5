#!/usr/bin/env bash
# End-to-end test of the Python SDK snippet of docs/clients.md ("Python SDK"), run by ctest with
# MCPQ_BIN_DIR set to the build dir and the repository root as cwd: the snippet as printed (only
# the port 8080 changed) against a local stack with the demo config (deploy/local/mcpq.json);
# it must print the tools (echo among them) and {'text': 'hello'}.
# It needs the `mcp` package (PyPI), which the build machines cannot install: when
# `python3 -c 'import mcp'` fails the test exits 77, which CMakeLists.txt declares as this
# test's SKIP_RETURN_CODE, so ctest reports it skipped. KEEP=1 keeps the state dir.
set -euo pipefail

if ! python3 -c 'import mcp' 2>/dev/null; then
    echo "skipped: the Python package 'mcp' is not importable (pip install mcp); docs/clients.md's Python snippet was not run"
    exit 77
fi
# shellcheck source=tests/e2e/readme_lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/readme_lib.sh"

STEP="stack"
start_stack --workers 1 --config "$REPO/deploy/local/mcpq.json"

STEP="Python SDK snippet"
doc_block docs/clients.md python '## Python SDK' | sed "s#127\.0\.0\.1:8080#127.0.0.1:$PORT#g" >"$TMP/client.py"
grep -q streamablehttp_client "$TMP/client.py" || fail "no Python SDK snippet in docs/clients.md"
timeout 30 python3 "$TMP/client.py" >"$TMP/py.out" 2>"$TMP/py.err" || fail "the snippet failed: $(tail -n 5 "$TMP/py.err")"
grep -qw echo <(head -n 1 "$TMP/py.out") || fail "the snippet lists no echo: $(cat "$TMP/py.out")"
[ "$(sed -n 2p "$TMP/py.out")" = "{'text': 'hello'}" ] || fail "the snippet printed: $(cat "$TMP/py.out")"
echo "ok - Python SDK snippet: list_tools names echo, call_tool echo prints {'text': 'hello'}"
